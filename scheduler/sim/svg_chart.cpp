#include "scheduler/sim/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace dancemoe::sim {
namespace {

constexpr double kWidth = 760, kHeight = 420;
constexpr double kLeft = 72, kRight = 170, kTop = 44, kBottom = 56;
// Colour-blind-safe palette (Okabe-Ito), then greys.
const char* const kColors[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                               "#56B4E9", "#F0E442", "#000000", "#777777", "#BBBBBB"};

std::string color(size_t i) { return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))]; }

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.6g", v);
  }
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

void header(std::ostringstream& s, const std::string& title) {
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
    << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    // Long titles get a smaller font so that they fit the width.
    << "<text x=\"" << kWidth / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\""
    << (title.size() <= 80 ? 15 : (title.size() <= 100 ? 12 : 10)) << "\">" << escape(title)
    << "</text>\n";
}

void legend(std::ostringstream& s, const std::vector<ChartSeries>& series, bool lines) {
  const double x = kWidth - kRight + 16;
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = kTop + 8 + 20.0 * i;
    if (lines) {
      const char* dash = i % 3 == 1 ? "6,3" : (i % 3 == 2 ? "2,2" : "none");
      s << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x + 22 << "\" y2=\"" << y
        << "\" stroke=\"" << color(i) << "\" stroke-width=\"2.5\" stroke-dasharray=\"" << dash
        << "\"/>\n";
    } else {
      s << "<rect x=\"" << x << "\" y=\"" << y - 6 << "\" width=\"14\" height=\"12\" fill=\""
        << color(i) << "\"/>\n";
    }
    s << "<text x=\"" << x + 28 << "\" y=\"" << y + 4 << "\">" << escape(series[i].name)
      << "</text>\n";
  }
}

// Axis frame, y grid and tick labels; returns the y -> pixel mapping range.
void y_axis(std::ostringstream& s, const std::vector<double>& ticks, double lo, double hi,
            const std::string& label, bool log_scale) {
  const double plot_h = kHeight - kTop - kBottom;
  for (double t : ticks) {
    const double v = log_scale ? std::log10(t) : t;
    const double y = kTop + plot_h * (1.0 - (v - lo) / (hi - lo));
    s << "<line x1=\"" << kLeft << "\" y1=\"" << num(y) << "\" x2=\"" << kWidth - kRight
      << "\" y2=\"" << num(y) << "\" stroke=\"#e5e5e5\"/>\n"
      << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">" << fmt(t)
      << "</text>\n";
  }
  s << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\""
    << kHeight - kBottom << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << kLeft << "\" y1=\"" << kHeight - kBottom << "\" x2=\"" << kWidth - kRight
    << "\" y2=\"" << kHeight - kBottom << "\" stroke=\"black\"/>\n"
    << "<text transform=\"translate(18," << kTop + plot_h / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << escape(label) << "</text>\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!(hi > lo)) hi = lo + 1.0;
  const double raw = (hi - lo) / std::max(target_count, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // From the last step at or below lo to the first at or above hi, so the
  // axis always covers the data.
  std::vector<double> ticks;
  const long first = static_cast<long>(std::floor(lo / step + 1e-9));
  const long last = static_cast<long>(std::ceil(hi / step - 1e-9));
  for (long k = first; k <= last; ++k) ticks.push_back(k == 0 ? 0.0 : k * step);
  return ticks;
}

std::string render_line_chart(const LineChart& chart) {
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  bool first = true;
  for (const ChartSeries& series : chart.series) {
    for (size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
      if (first) {
        x_lo = x_hi = series.x[i];
        y_lo = y_hi = series.y[i];
        first = false;
      }
      x_lo = std::min(x_lo, series.x[i]);
      x_hi = std::max(x_hi, series.x[i]);
      y_lo = std::min(y_lo, series.y[i]);
      y_hi = std::max(y_hi, series.y[i]);
    }
  }
  if (chart.y_from_zero) y_lo = std::min(0.0, y_lo);
  if (chart.y_max > 0) y_hi = chart.y_max;
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  if (!(y_hi > y_lo)) y_hi = y_lo + 1;
  const std::vector<double> y_ticks = nice_ticks(y_lo, y_hi, 6);
  y_lo = std::min(y_lo, y_ticks.front());
  y_hi = std::max(y_hi, y_ticks.back());
  const std::vector<double> x_ticks = nice_ticks(x_lo, x_hi, 8);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + plot_w * (x - x_lo) / (x_hi - x_lo); };
  auto py = [&](double y) { return kTop + plot_h * (1.0 - (y - y_lo) / (y_hi - y_lo)); };

  std::ostringstream s;
  header(s, chart.title);
  y_axis(s, y_ticks, y_lo, y_hi, chart.y_label, false);
  for (double t : x_ticks) {
    if (t < x_lo - 1e-9 || t > x_hi + 1e-9) continue;
    s << "<text x=\"" << num(px(t)) << "\" y=\"" << kHeight - kBottom + 16
      << "\" text-anchor=\"middle\">" << fmt(t) << "</text>\n";
  }
  s << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << kHeight - 14
    << "\" text-anchor=\"middle\">" << escape(chart.x_label) << "</text>\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& series = chart.series[i];
    // Dashes tell apart series that overlap exactly (e.g. two policies that
    // agree) and colours that repeat.
    const char* dash = i % 3 == 1 ? "6,3" : (i % 3 == 2 ? "2,2" : "none");
    s << "<polyline fill=\"none\" stroke=\"" << color(i) << "\" stroke-width=\"2\" "
      << "stroke-dasharray=\"" << dash << "\" points=\"";
    for (size_t k = 0; k < series.x.size() && k < series.y.size(); ++k) {
      s << num(px(series.x[k])) << "," << num(py(series.y[k])) << " ";
    }
    s << "\"/>\n";
  }
  legend(s, chart.series, true);
  s << "</svg>\n";
  return s.str();
}

std::string render_bar_chart(const BarChart& chart) {
  double y_hi = 0, y_min_pos = 0;
  for (const ChartSeries& series : chart.series) {
    for (double v : series.y) {
      y_hi = std::max(y_hi, v);
      if (v > 0 && (y_min_pos == 0 || v < y_min_pos)) y_min_pos = v;
    }
  }
  if (!(y_hi > 0)) y_hi = 1;
  std::vector<double> ticks;
  double lo = 0, hi = 0;
  if (chart.log_y) {
    // A base below the smallest bar so that it still shows (a ratio of 1 is not 0).
    lo = std::floor(std::log10(y_min_pos > 0 ? y_min_pos : 1e-3) - 0.3);
    hi = std::ceil(std::log10(y_hi));
    if (hi <= lo) hi = lo + 1;
    for (double e = lo; e <= hi; e += 1) ticks.push_back(std::pow(10.0, e));
  } else {
    ticks = nice_ticks(0.0, y_hi, 6);
    hi = ticks.back();
  }
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto py = [&](double y) {
    const double v = chart.log_y ? std::log10(std::max(y, std::pow(10.0, lo))) : y;
    return kTop + plot_h * (1.0 - (v - lo) / (hi - lo));
  };
  std::ostringstream s;
  header(s, chart.title);
  y_axis(s, ticks, lo, hi, chart.y_label, chart.log_y);
  const size_t n_cat = std::max<size_t>(chart.categories.size(), 1);
  const size_t n_series = std::max<size_t>(chart.series.size(), 1);
  const double group_w = plot_w / n_cat;
  const double bar_w = group_w * 0.8 / n_series;
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double gx = kLeft + group_w * c + group_w * 0.1;
    for (size_t i = 0; i < chart.series.size(); ++i) {
      if (c >= chart.series[i].y.size()) continue;
      const double v = chart.series[i].y[c];
      const double top = py(v), bottom = py(chart.log_y ? std::pow(10.0, lo) : 0.0);
      s << "<rect x=\"" << num(gx + bar_w * i) << "\" y=\"" << num(top) << "\" width=\""
        << num(bar_w * 0.92) << "\" height=\"" << num(std::max(0.0, bottom - top)) << "\" fill=\""
        << color(i) << "\"><title>" << escape(chart.series[i].name) << ": " << fmt(v)
        << "</title></rect>\n";
    }
    // Category labels shrink to fit their group (about 0.6 em per character).
    const double fit = group_w / (0.6 * std::max<size_t>(chart.categories[c].size(), 1));
    s << "<text x=\"" << num(gx + group_w * 0.4) << "\" y=\"" << kHeight - kBottom + 16
      << "\" text-anchor=\"middle\" font-size=\"" << num(std::min(12.0, fit)) << "\">"
      << escape(chart.categories[c]) << "</text>\n";
  }
  legend(s, chart.series, false);
  s << "</svg>\n";
  return s.str();
}

}  // namespace dancemoe::sim
