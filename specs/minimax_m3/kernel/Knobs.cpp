#include "specs/minimax_m3/kernel/Knobs.h"

#include <fmt/format.h>

#include <charconv>
#include <set>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

const char* moeExpertsName(MoeExperts e) {
  switch (e) {
    case MoeExperts::All: return "all";
    case MoeExperts::Shared: return "shared";
    case MoeExperts::Routed: return "routed";
  }
  return "?";
}

const char* ffnInputName(FfnInput i) { return i == FfnInput::Attn ? "attn" : "part"; }

FfnInput ffnInputOf(const std::string& name, const std::string& where) {
  for (FfnInput i : {FfnInput::Attn, FfnInput::Part})
    if (name == ffnInputName(i)) return i;
  throw InputError(where, fmt::format("'{}' was given: {}", name, kFfnInputsAllowed));
}

std::string FfnKnobs::canonical() const {
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : " ") + t; };
  if (experts != MoeExperts::All) add(fmt::format("experts={}", moeExpertsName(experts)));
  if (scales != ScaleLayout::E8m0Shuffle) add(fmt::format("scales={}", scaleLayoutName(scales)));
  if (input != FfnInput::Attn) add(fmt::format("input={}", ffnInputName(input)));
  if (trace) add("trace=1");
  if (dropMark >= 0) add(fmt::format("drop_mark={}", dropMark));
  if (mutation) add("mutate=" + mutation.canonical());
  if (moe != MoeQuant::A16w4) add(fmt::format("moe={}", moeQuantName(moe)));
  return s;
}

FfnKnobs FfnKnobs::parse(const std::string& text, const std::string& where) {
  FfnKnobs k;
  std::set<std::string> seen;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string tok = text.substr(at, end - at);
    at = end + 1;
    if (tok.empty()) continue;
    const size_t eq = tok.find('=');
    const std::string name = tok.substr(0, eq), value = eq == std::string::npos ? "" : tok.substr(eq + 1);
    if (!seen.insert(name).second) throw InputError(where, fmt::format("knob '{}' is given twice", name));
    if (name == "experts") {
      if (value == "all") k.experts = MoeExperts::All;
      else if (value == "shared") k.experts = MoeExperts::Shared;
      else if (value == "routed") k.experts = MoeExperts::Routed;
      else throw InputError(where, fmt::format("knob experts={}: expected all, shared or routed", value));
    } else if (name == "scales") {
      k.scales = scaleLayoutOf(value, where + ", knob scales");
    } else if (name == "input") {
      k.input = ffnInputOf(value, where + ", knob input");
    } else if (name == "trace") {
      if (value != "0" && value != "1") throw InputError(where, fmt::format("knob trace={}: expected 0 or 1", value));
      k.trace = value == "1";
    } else if (name == "drop_mark") {
      int v = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size() || v < -1)
        throw InputError(where, fmt::format("knob drop_mark={}: expected a CTA index, or -1 for none", value));
      k.dropMark = v;
    } else if (name == "mutate") {
      k.mutation = Mutation::parse(value, where);
    } else if (name == "moe") {
      k.moe = parseMoeQuant(value, where + ", knob moe");
    } else {
      throw InputError(where, fmt::format("unknown knob '{}': the minimax_m3.ffn spec has experts, input, scales, "
                                          "trace, drop_mark, (race tests only) mutate and (the layer's FFN only) moe",
                                          tok));
    }
  }
  return k;
}

FfnKnobs knobsOf(const ir::Key& key) { return FfnKnobs::parse(key.knobs, key.variantName()); }

ir::Key withKnobs(ir::Key key, const FfnKnobs& knobs) {
  key.knobs = knobs.canonical();
  return key;
}

}  // namespace monogen::specs::minimax_m3
