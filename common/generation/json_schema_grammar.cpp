#include "common/generation/json_schema_grammar.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/base/json_preview.h"

namespace dancemoe {
namespace {

using json = nlohmann::ordered_json;
using Seq = GrammarBuilder::Sequence;

constexpr int kMaxSchemaDepth = 64;
constexpr int64_t kMaxRepeat = 10000;
constexpr int kMaxIntegerDigits = 18;
constexpr int kMaxFractionDigits = 16;
constexpr int kMaxIndent = 20;

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",  "examples",
                                          "$schema",  "$id",         "$comment", "deprecated",
                                          "readOnly", "writeOnly",   "$defs",    "definitions"};
  return k;
}

const std::set<std::string>& supported_keywords() {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "nullable",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
  return k;
}

Seq cat(std::initializer_list<Seq> parts) {
  Seq out;
  for (const Seq& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string at(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Status unsupported(const std::string& path, const std::string& what) {
  return invalid_argument((path.empty() ? "" : path + ": ") + what);
}

class Converter {
 public:
  explicit Converter(const json& root) : root_(root) {}

  Result<Grammar> object_grammar() { return b_.finish(object_any()); }

  Result<Grammar> schema_grammar() {
    DMOE_ASSIGN_OR_RETURN(uint32_t root, convert(root_, "", 0));
    return b_.finish(root);
  }

 private:
  Seq ref(uint32_t rule) const { return {b_.ref(rule)}; }
  // A rule made of `alternatives`, as a sequence of one reference to it.
  Seq sub(std::vector<Seq> alternatives) { return ref(b_.rule(std::move(alternatives))); }
  Seq lit(std::string_view text) { return b_.literal(text); }
  Seq range(uint8_t lo, uint8_t hi) { return {b_.byte_range(lo, hi)}; }
  Seq digit() { return range('0', '9'); }

  // item{min,max}; max < 0: unbounded.
  Seq repeat(const Seq& item, int64_t min, int64_t max) {
    Seq out;
    for (int64_t i = 0; i < min; ++i) out.insert(out.end(), item.begin(), item.end());
    if (max < 0) {
      const uint32_t star = b_.declare();
      b_.define(star, {{}, cat({item, ref(star)})});
      out.push_back(b_.ref(star));
    } else if (max > min) {
      uint32_t chain = b_.rule({{}, item});
      for (int64_t k = 1; k < max - min; ++k) chain = b_.rule({{}, cat({item, ref(chain)})});
      out.push_back(b_.ref(chain));
    }
    return out;
  }

  uint32_t ws() {
    if (!ws_) ws_ = b_.rule({{}, lit(" "), cat({lit("\n"), repeat(lit(" "), 0, kMaxIndent)})});
    return *ws_;
  }
  Seq sep(std::string_view punct) { return cat({ref(ws()), lit(punct), ref(ws())}); }

  uint32_t hex() {
    if (!hex_) hex_ = b_.rule({range('0', '9'), range('a', 'f'), range('A', 'F')});
    return *hex_;
  }

  // One character of a JSON string: unescaped UTF-8 (never a lone
  // surrogate or an overlong form), or an escape (\u never a surrogate,
  // which parsers refuse alone).
  uint32_t char_rule() {
    if (char_) return *char_;
    ByteSet plain;
    for (int c = 0x20; c <= 0x7f; ++c) {
      if (c != '"' && c != '\\') plain.set(static_cast<size_t>(c));
    }
    ByteSet escaped;
    for (char c : std::string("\"\\/bfnrt")) escaped.set(static_cast<uint8_t>(c));
    const Seq h = ref(hex());
    const Seq cont = range(0x80, 0xbf);
    char_ = b_.rule({
        {b_.bytes(plain)},
        cat({lit("\\"), {b_.bytes(escaped)}}),
        cat({lit("\\u"), sub({range('0', '9'), range('a', 'c'), range('A', 'C')}), h, h, h}),
        cat({lit("\\u"), sub({lit("d"), lit("D")}), range('0', '7'), h, h}),
        cat({lit("\\u"), sub({range('e', 'f'), range('E', 'F')}), h, h, h}),
        cat({range(0xc2, 0xdf), cont}),
        cat({range(0xe0, 0xe0), range(0xa0, 0xbf), cont}),
        cat({range(0xe1, 0xec), cont, cont}),
        cat({range(0xed, 0xed), range(0x80, 0x9f), cont}),
        cat({range(0xee, 0xef), cont, cont}),
        cat({range(0xf0, 0xf0), range(0x90, 0xbf), cont, cont}),
        cat({range(0xf1, 0xf3), cont, cont, cont}),
        cat({range(0xf4, 0xf4), range(0x80, 0x8f), cont, cont}),
    });
    return *char_;
  }

  uint32_t string_rule(int64_t min_length = 0, int64_t max_length = -1) {
    if (min_length == 0 && max_length < 0 && string_) return *string_;
    const uint32_t r =
        b_.rule({cat({lit("\""), repeat(ref(char_rule()), min_length, max_length), lit("\"")})});
    if (min_length == 0 && max_length < 0) string_ = r;
    return r;
  }

  // "0" or a digit 1-9 and up to kMaxIntegerDigits - 1 more.
  uint32_t natural() {
    if (!natural_) {
      natural_ =
          b_.rule({lit("0"), cat({range('1', '9'), repeat(digit(), 0, kMaxIntegerDigits - 1)})});
    }
    return *natural_;
  }

  uint32_t integer_rule() {
    if (!integer_) integer_ = b_.rule({ref(natural()), cat({lit("-"), ref(natural())})});
    return *integer_;
  }

  uint32_t number_rule(bool non_negative) {
    std::optional<uint32_t>& cached = non_negative ? non_negative_number_ : number_;
    if (cached) return *cached;
    const Seq fraction = sub({{}, cat({lit("."), repeat(digit(), 1, kMaxFractionDigits)})});
    // Two exponent digits at most: 1e999 overflows a double.
    const Seq exponent = sub(
        {{},
         cat({sub({lit("e"), lit("E")}), sub({{}, lit("+"), lit("-")}), repeat(digit(), 1, 2)})});
    std::vector<Seq> alternatives = {cat({ref(natural()), fraction, exponent})};
    if (!non_negative) alternatives.push_back(cat({lit("-"), ref(natural()), fraction, exponent}));
    cached = b_.rule(std::move(alternatives));
    return *cached;
  }

  uint32_t object_any() {
    if (object_any_) return *object_any_;
    object_any_ = b_.declare();
    const Seq member = cat({ref(string_rule()), sep(":"), ref(any_value())});
    b_.define(*object_any_, {cat({lit("{"), ref(ws()), lit("}")}),
                             cat({lit("{"), ref(ws()), member,
                                  repeat(cat({sep(","), member}), 0, -1), ref(ws()), lit("}")})});
    return *object_any_;
  }

  uint32_t array_of(uint32_t item, int64_t min, int64_t max) {
    std::vector<Seq> alternatives;
    if (min == 0) alternatives.push_back(cat({lit("["), ref(ws()), lit("]")}));
    if (max != 0) {
      const int64_t more_min = std::max<int64_t>(min - 1, 0);
      const int64_t more_max = max < 0 ? -1 : max - 1;
      alternatives.push_back(
          cat({lit("["), ref(ws()), ref(item),
               repeat(cat({sep(","), ref(item)}), more_min, more_max), ref(ws()), lit("]")}));
    }
    return b_.rule(std::move(alternatives));
  }

  uint32_t any_value() {
    if (any_) return *any_;
    any_ = b_.declare();
    const uint32_t array = b_.declare();
    b_.define(*any_, {ref(object_any()), ref(array), ref(string_rule()), ref(number_rule(false)),
                      lit("true"), lit("false"), lit("null")});
    b_.define(array, {ref(array_of(*any_, 0, -1))});
    return *any_;
  }

  // Decimal numbers in [lo, hi] written with exactly lo.size() digits.
  std::vector<Seq> same_length(const std::string& lo, const std::string& hi) {
    if (lo.empty()) return {{}};
    // Every number of this length: one run of digits (and no exponential
    // recursion into each digit).
    if (lo.find_first_not_of('0') == std::string::npos &&
        hi.find_first_not_of('9') == std::string::npos) {
      return {repeat(digit(), static_cast<int64_t>(lo.size()), static_cast<int64_t>(lo.size()))};
    }
    const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
    std::vector<Seq> out;
    auto prefixed = [&](char first, std::vector<Seq> tails) {
      for (Seq& t : tails) out.push_back(cat({lit(std::string(1, first)), t}));
    };
    if (lo[0] == hi[0]) {
      prefixed(lo[0], same_length(rest_lo, rest_hi));
      return out;
    }
    prefixed(lo[0], same_length(rest_lo, std::string(rest_lo.size(), '9')));
    if (lo[0] + 1 <= hi[0] - 1) {
      out.push_back(cat({range(static_cast<uint8_t>(lo[0] + 1), static_cast<uint8_t>(hi[0] - 1)),
                         repeat(digit(), static_cast<int64_t>(rest_lo.size()),
                                static_cast<int64_t>(rest_lo.size()))}));
    }
    prefixed(hi[0], same_length(std::string(rest_hi.size(), '0'), rest_hi));
    return out;
  }

  // Non-negative integers in [lo, hi] (hi nullopt: up to kMaxIntegerDigits digits).
  std::vector<Seq> natural_range(int64_t lo, std::optional<int64_t> hi) {
    std::vector<Seq> out;
    const int lo_digits = static_cast<int>(std::to_string(lo).size());
    const int hi_digits = hi ? static_cast<int>(std::to_string(*hi).size()) : kMaxIntegerDigits;
    for (int d = lo_digits; d <= hi_digits; ++d) {
      const std::string smallest =
          d == 1 ? "0" : "1" + std::string(static_cast<size_t>(d - 1), '0');
      const std::string a = d == lo_digits ? std::to_string(lo) : smallest;
      const std::string b =
          hi && d == hi_digits ? std::to_string(*hi) : std::string(static_cast<size_t>(d), '9');
      if (a.size() == b.size() && a > b) continue;
      for (Seq& s : same_length(a, b)) out.push_back(std::move(s));
    }
    return out;
  }

  Result<uint32_t> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi,
                                 const std::string& path) {
    if (lo && hi && *lo > *hi) {
      return unsupported(path, "minimum " + std::to_string(*lo) + " is above maximum " +
                                   std::to_string(*hi) + ": no integer fits");
    }
    if (!lo && !hi) return integer_rule();
    std::vector<Seq> alternatives;
    if (!hi || *hi >= 0) {  // the non-negative part
      for (Seq& s : natural_range(lo ? std::max<int64_t>(*lo, 0) : 0, hi)) {
        alternatives.push_back(std::move(s));
      }
    }
    if (!lo || *lo < 0) {  // the negative part, as "-" and its magnitude
      const int64_t smallest = hi && *hi < 0 ? -*hi : 1;
      std::optional<int64_t> largest;
      if (lo) largest = -*lo;
      for (Seq& s : natural_range(smallest, largest)) alternatives.push_back(cat({lit("-"), s}));
    }
    return b_.rule(std::move(alternatives));
  }

  Result<std::optional<int64_t>> bound(const json& s, const std::string& path, const char* key,
                                       bool lower) {
    const auto it = s.find(key);
    if (it == s.end()) return std::optional<int64_t>();
    if (!it->is_number()) return unsupported(at(path, key), std::string(key) + " must be a number");
    const double v = it->get<double>();
    if (!std::isfinite(v) || std::fabs(v) > 1e17) {
      return unsupported(at(path, key), std::string(key) + " must be within +-1e17");
    }
    const bool exclusive = std::string(key).rfind("exclusive", 0) == 0;
    double r = lower ? std::ceil(v) : std::floor(v);
    if (exclusive && r == v) r += lower ? 1 : -1;
    return std::optional<int64_t>(static_cast<int64_t>(r));
  }

  Result<uint32_t> integer_schema(const json& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    for (const char* key : {"minimum", "exclusiveMinimum"}) {
      DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> v, bound(s, path, key, true));
      if (v && (!lo || *v > *lo)) lo = v;
    }
    for (const char* key : {"maximum", "exclusiveMaximum"}) {
      DMOE_ASSIGN_OR_RETURN(std::optional<int64_t> v, bound(s, path, key, false));
      if (v && (!hi || *v < *hi)) hi = v;
    }
    return integer_range(lo, hi, path);
  }

  Result<uint32_t> number_schema(const json& s, const std::string& path) {
    for (const char* key : {"maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (s.contains(key)) {
        return unsupported(at(path, key), std::string("'") + key +
                                              "' is not supported on numbers (only on integers)");
      }
    }
    if (const auto it = s.find("minimum"); it != s.end()) {
      if (!it->is_number() || it->get<double>() != 0.0) {
        return unsupported(at(path, "minimum"),
                           "on numbers only 'minimum': 0 is supported (any bound on integers)");
      }
      return number_rule(true);
    }
    return number_rule(false);
  }

  Result<int64_t> count(const json& s, const std::string& path, const char* key, int64_t fallback) {
    const auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxRepeat) {
      return unsupported(at(path, key), std::string(key) + " must be an integer in 0.." +
                                            std::to_string(kMaxRepeat) + ", got " +
                                            json_preview(*it));
    }
    return it->get<int64_t>();
  }

  Result<uint32_t> format_rule(const std::string& format, const std::string& path) {
    const Seq d = digit();
    auto two = [&](char lo0, char hi0, char hi1_when_top) {
      // 00..(hi0)(hi1): first digit lo0..hi0-1 any second, or hi0 with 0..hi1.
      std::vector<Seq> alternatives;
      if (hi0 > lo0) {
        alternatives.push_back(
            cat({range(static_cast<uint8_t>(lo0), static_cast<uint8_t>(hi0 - 1)), d}));
      }
      alternatives.push_back(
          cat({lit(std::string(1, hi0)), range('0', static_cast<uint8_t>(hi1_when_top))}));
      return sub(std::move(alternatives));
    };
    const Seq hour = two('0', '2', '3');
    const Seq minute = cat({range('0', '5'), d});
    const Seq time =
        cat({hour, lit(":"), minute, lit(":"), minute, sub({{}, cat({lit("."), repeat(d, 1, 6)})}),
             sub({lit("Z"), cat({sub({lit("+"), lit("-")}), hour, lit(":"), minute})})});
    // Days that exist in every year: up to the 28th of February, the 30th
    // of the 30-day months and the 31st of the others.
    const Seq day28 = sub(
        {cat({lit("0"), range('1', '9')}), cat({lit("1"), d}), cat({lit("2"), range('0', '8')})});
    const Seq day30 = sub({day28, lit("29"), lit("30")});
    const Seq day31 = sub({day30, lit("31")});
    const Seq date = cat(
        {repeat(d, 4, 4), lit("-"),
         sub({cat({lit("02-"), day28}),
              cat({sub({cat({lit("0"), {b_.bytes(ByteSet().set('4').set('6').set('9'))}}),
                        lit("11")}),
                   lit("-"), day30}),
              cat({sub({cat({lit("0"),
                             {b_.bytes(ByteSet().set('1').set('3').set('5').set('7').set('8'))}}),
                        lit("10"), lit("12")}),
                   lit("-"), day31})})});
    Seq body;
    if (format == "date") {
      body = date;
    } else if (format == "time") {
      body = time;
    } else if (format == "date-time") {
      body = cat({date, lit("T"), time});
    } else if (format == "uuid") {
      const Seq h = sub({range('0', '9'), range('a', 'f')});
      body = cat({repeat(h, 8, 8), lit("-"), repeat(h, 4, 4), lit("-"), repeat(h, 4, 4), lit("-"),
                  repeat(h, 4, 4), lit("-"), repeat(h, 12, 12)});
    } else {
      return unsupported(at(path, "format"),
                         "format '" + format + "' is not supported (date, time, date-time, uuid)");
    }
    return b_.rule({cat({lit("\""), body, lit("\"")})});
  }

  Result<uint32_t> string_schema(const json& s, const std::string& path) {
    if (const auto it = s.find("format"); it != s.end()) {
      if (!it->is_string()) return unsupported(at(path, "format"), "format must be a string");
      if (s.contains("minLength") || s.contains("maxLength")) {
        return unsupported(path, "minLength/maxLength beside a format are not supported");
      }
      return format_rule(it->get<std::string>(), path);
    }
    DMOE_ASSIGN_OR_RETURN(int64_t min, count(s, path, "minLength", 0));
    DMOE_ASSIGN_OR_RETURN(int64_t max, count(s, path, "maxLength", -1));
    if (max >= 0 && min > max) return unsupported(path, "minLength is above maxLength");
    return string_rule(min, max);
  }

  Result<uint32_t> object_schema(const json& s, const std::string& path, int depth) {
    const auto props = s.find("properties");
    const auto additional = s.find("additionalProperties");
    std::set<std::string> required;
    if (const auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) return unsupported(at(path, "required"), "required must be a list");
      for (const json& name : *it) {
        if (!name.is_string()) {
          return unsupported(at(path, "required"), "required must list property names");
        }
        required.insert(name.get<std::string>());
      }
    }
    if (props == s.end() || props->empty()) {
      for (const std::string& name : required) {
        return unsupported(at(path, "required"),
                           "'" + name + "' is required but not among the properties");
      }
      if (additional == s.end() || (additional->is_boolean() && additional->get<bool>())) {
        return object_any();
      }
      if (additional->is_boolean()) return b_.rule({cat({lit("{"), ref(ws()), lit("}")})});
      DMOE_ASSIGN_OR_RETURN(uint32_t value,
                            convert(*additional, at(path, "additionalProperties"), depth + 1));
      const Seq member = cat({ref(string_rule()), sep(":"), ref(value)});
      return b_.rule({cat({lit("{"), ref(ws()), lit("}")}),
                      cat({lit("{"), ref(ws()), member, repeat(cat({sep(","), member}), 0, -1),
                           ref(ws()), lit("}")})});
    }
    if (!props->is_object())
      return unsupported(at(path, "properties"), "properties must be an object");
    std::vector<std::pair<Seq, bool>> members;  // (key ws : ws value, required)
    for (const auto& [name, schema] : props->items()) {
      DMOE_ASSIGN_OR_RETURN(uint32_t value,
                            convert(schema, at(at(path, "properties"), name), depth + 1));
      members.emplace_back(
          cat({lit(json(name).dump(-1, ' ', false, json::error_handler_t::replace)), sep(":"),
               ref(value)}),
          required.erase(name) > 0);
    }
    if (!required.empty()) {
      return unsupported(at(path, "required"),
                         "'" + *required.begin() + "' is required but not among the properties");
    }
    // first[i]: the members from i on when none was written yet; after[i]:
    // when one was (each then starts with a comma).
    uint32_t first = b_.rule({{}});
    uint32_t after = first;
    for (size_t i = members.size(); i-- > 0;) {
      const auto& [member, is_required] = members[i];
      std::vector<Seq> first_alternatives = {cat({member, ref(after)})};
      std::vector<Seq> after_alternatives = {cat({sep(","), member, ref(after)})};
      if (!is_required) {
        first_alternatives.push_back(ref(first));
        after_alternatives.push_back(ref(after));
      }
      const uint32_t next_after = b_.rule(std::move(after_alternatives));
      first = b_.rule(std::move(first_alternatives));
      after = next_after;
    }
    return b_.rule({cat({lit("{"), ref(ws()), ref(first), ref(ws()), lit("}")})});
  }

  Result<uint32_t> array_schema(const json& s, const std::string& path, int depth) {
    DMOE_ASSIGN_OR_RETURN(int64_t min, count(s, path, "minItems", 0));
    DMOE_ASSIGN_OR_RETURN(int64_t max, count(s, path, "maxItems", -1));
    if (max >= 0 && min > max) return unsupported(path, "minItems is above maxItems");
    const auto items = s.find("items");
    std::optional<uint32_t> item;  // nullopt: no items beyond the prefix
    if (items == s.end() || (items->is_boolean() && items->get<bool>())) {
      item = any_value();
    } else if (!items->is_boolean()) {
      DMOE_ASSIGN_OR_RETURN(item, convert(*items, at(path, "items"), depth + 1));
    }
    const auto prefix = s.find("prefixItems");
    if (prefix == s.end()) {
      if (!item) return b_.rule({cat({lit("["), ref(ws()), lit("]")})});
      return array_of(*item, min, max);
    }
    if (!prefix->is_array() || prefix->empty()) {
      return unsupported(at(path, "prefixItems"), "prefixItems must be a non-empty list");
    }
    const auto n = static_cast<int64_t>(prefix->size());
    if (max >= 0 && max < n) return unsupported(path, "maxItems is below the prefixItems' count");
    Seq body = cat({lit("["), ref(ws())});
    for (int64_t i = 0; i < n; ++i) {
      DMOE_ASSIGN_OR_RETURN(uint32_t element,
                            convert((*prefix)[static_cast<size_t>(i)],
                                    at(path, "prefixItems[" + std::to_string(i) + "]"), depth + 1));
      if (i > 0) body = cat({body, sep(",")});
      body = cat({body, ref(element)});
    }
    const int64_t extra_min = std::max<int64_t>(min - n, 0);
    if (extra_min > 0 && !item)
      return unsupported(path, "minItems is above the prefixItems' count");
    // Beyond the prefix only what minItems asks for (fewer items still fit the schema).
    if (extra_min > 0)
      body = cat({body, repeat(cat({sep(","), ref(*item)}), extra_min, extra_min)});
    return b_.rule({cat({body, ref(ws()), lit("]")})});
  }

  Result<uint32_t> ref_schema(const std::string& ref_text, const std::string& path, int depth) {
    if (const auto it = refs_.find(ref_text); it != refs_.end()) return it->second;
    if (ref_text.empty() || ref_text[0] != '#') {
      return unsupported(at(path, "$ref"),
                         "only references within the schema ('#...') are "
                         "supported, got '" +
                             ref_text + "'");
    }
    const json* target = nullptr;
    try {
      target = &root_.at(json::json_pointer(ref_text.substr(1)));
    } catch (const json::exception&) {
      return unsupported(at(path, "$ref"), "'" + ref_text + "' names nothing in the schema");
    }
    const uint32_t rule = b_.declare();
    refs_.emplace(ref_text, rule);
    DMOE_ASSIGN_OR_RETURN(uint32_t body, convert(*target, ref_text, depth + 1));
    b_.define(rule, {ref(body)});
    return rule;
  }

  Result<uint32_t> typed(const std::string& type, const json& s, const std::string& path,
                         int depth) {
    if (type == "object") return object_schema(s, path, depth);
    if (type == "array") return array_schema(s, path, depth);
    if (type == "string") return string_schema(s, path);
    if (type == "integer") return integer_schema(s, path);
    if (type == "number") return number_schema(s, path);
    if (type == "boolean") return b_.rule({lit("true"), lit("false")});
    if (type == "null") return b_.rule({lit("null")});
    return unsupported(at(path, "type"), "unknown type '" + type +
                                             "' (object, array, string, integer, number, "
                                             "boolean, null)");
  }

  Result<uint32_t> convert(const json& s, const std::string& path, int depth) {
    if (b_.over_budget()) {
      return Status(StatusCode::kResourceExhausted,
                    "the schema makes a grammar larger than this node follows (too many "
                    "properties, or minItems/minLength/maxLength too large together)");
    }
    if (depth > kMaxSchemaDepth) {
      return unsupported(
          path, "the schema nests deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
    }
    if (s.is_boolean()) {
      if (s.get<bool>()) return any_value();
      return unsupported(path, "the schema 'false' admits no value");
    }
    if (!s.is_object())
      return unsupported(path, "expected a schema (an object), got " + json_preview(s));
    std::set<std::string> assertions;
    for (const auto& [key, value] : s.items()) {
      if (annotations().count(key)) continue;
      if (!supported_keywords().count(key)) {
        return unsupported(at(path, key), "'" + key + "' is not supported");
      }
      assertions.insert(key);
    }
    auto alone = [&](const char* keyword) -> Status {
      for (const std::string& other : assertions) {
        if (other != keyword && other != "nullable") {
          return unsupported(
              path, std::string("'") + keyword + "' beside '" + other + "' is not supported");
        }
      }
      return Status::ok();
    };
    std::vector<Seq> alternatives;
    if (const auto it = s.find("nullable"); it != s.end()) {
      if (!it->is_boolean()) {
        return unsupported(at(path, "nullable"), "nullable must be true or false");
      }
      if (it->get<bool>()) alternatives.push_back(lit("null"));
    }
    if (const auto it = s.find("$ref"); it != s.end()) {
      DMOE_RETURN_IF_ERROR(alone("$ref"));
      if (!it->is_string()) return unsupported(at(path, "$ref"), "$ref must be a string");
      DMOE_ASSIGN_OR_RETURN(uint32_t r, ref_schema(it->get<std::string>(), path, depth));
      alternatives.push_back(ref(r));
    } else if (const auto c = s.find("const"); c != s.end()) {
      alternatives.push_back(lit(c->dump(-1, ' ', false, json::error_handler_t::replace)));
    } else if (const auto e = s.find("enum"); e != s.end()) {
      if (!e->is_array() || e->empty()) {
        return unsupported(at(path, "enum"), "enum must be a non-empty list");
      }
      for (const json& v : *e) {
        alternatives.push_back(lit(v.dump(-1, ' ', false, json::error_handler_t::replace)));
      }
    } else if (s.contains("anyOf") || s.contains("oneOf") || s.contains("allOf")) {
      const char* keyword = s.contains("anyOf") ? "anyOf" : s.contains("oneOf") ? "oneOf" : "allOf";
      DMOE_RETURN_IF_ERROR(alone(keyword));
      const json& list = s[keyword];
      if (!list.is_array() || list.empty()) {
        return unsupported(at(path, keyword), std::string(keyword) + " must be a non-empty list");
      }
      if (std::string(keyword) == "allOf" && list.size() != 1) {
        return unsupported(at(path, keyword), "allOf with more than one schema is not supported");
      }
      for (size_t i = 0; i < list.size(); ++i) {
        DMOE_ASSIGN_OR_RETURN(
            uint32_t r,
            convert(list[i], at(path, std::string(keyword) + "[" + std::to_string(i) + "]"),
                    depth + 1));
        alternatives.push_back(ref(r));
      }
    } else {
      std::vector<std::string> types;
      if (const auto t = s.find("type"); t != s.end()) {
        if (t->is_string()) {
          types.push_back(t->get<std::string>());
        } else if (t->is_array() && !t->empty()) {
          for (const json& one : *t) {
            if (!one.is_string()) return unsupported(at(path, "type"), "type must name types");
            types.push_back(one.get<std::string>());
          }
        } else {
          return unsupported(at(path, "type"), "type must be a string or a list of them");
        }
      } else if (s.contains("properties") || s.contains("additionalProperties") ||
                 s.contains("required")) {
        types.push_back("object");
      } else if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") ||
                 s.contains("maxItems")) {
        types.push_back("array");
      } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("format")) {
        types.push_back("string");
      } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                 s.contains("exclusiveMaximum")) {
        types.push_back("number");
      }
      if (types.empty()) alternatives.push_back(ref(any_value()));
      for (const std::string& type : types) {
        DMOE_ASSIGN_OR_RETURN(uint32_t r, typed(type, s, path, depth));
        alternatives.push_back(ref(r));
      }
    }
    return b_.rule(std::move(alternatives));
  }

  GrammarBuilder b_;
  const json& root_;
  std::map<std::string, uint32_t> refs_;
  std::optional<uint32_t> ws_, hex_, char_, string_, natural_, integer_, number_,
      non_negative_number_, object_any_, any_;
};

}  // namespace

Result<Grammar> json_object_grammar() {
  const json empty = json::object();
  return Converter(empty).object_grammar();
}

Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema) {
  return Converter(schema).schema_grammar();
}

}  // namespace dancemoe
