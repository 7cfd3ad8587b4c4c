// Which request fields that other servers accept this node takes but does
// not act on. Clients written for OpenAI, vLLM or llama-server send them as
// a matter of course; refusing them broke those clients, so a field named
// here is accepted, not validated, and ignored with one warning line per
// request (what vLLM and llama-server do). Every field not named here and
// not implemented is still refused by name, so that a typo never silently
// changes sampling.
//
// Fields that would change what the output is (a regex or grammar, allowed
// token lists, beam search) are not in the list: ignoring them would return
// output the client did not ask for, so they are refused as not supported.
//
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "edge_node/http/openai_request.h"

namespace dancemoe::node {

// True when `field` of this endpoint is accepted and ignored.
bool is_ignored_field(std::string_view field, OpenAiKind kind);

// True when `field` is a known field of another server that this node
// refuses because ignoring it would change the answer's meaning.
bool is_refused_field(std::string_view field);

}  // namespace dancemoe::node
