// Qwen3-Coder / Qwen3.5 XML tool calls:
//   <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>
// Parameter values are text. They become JSON by the type the request's tool schema gives the
// parameter: string (or unknown) -> a JSON string; number / integer / boolean / null / object /
// array -> the value parsed as JSON (Python's True / False / None accepted, as the template
// renders booleans with Python's str), falling back to a string when it does not parse.
// A value ends at its </parameter>; without one, at the next <parameter= or at </function>.
#include <algorithm>

#include "chat/output_internal.h"

namespace ridge::chat {
namespace {

// The schema type of a tool's parameter ("" when unknown).
std::string param_type(const nlohmann::json& tools, std::string_view fn, std::string_view param) {
  if (!tools.is_array()) return "";
  for (const auto& t : tools) {
    if (!t.is_object()) continue;
    const auto f = t.find("function");
    const nlohmann::json& def = (f != t.end() && f->is_object()) ? *f : t;
    const auto name = def.find("name");
    if (name == def.end() || !name->is_string() || name->get_ref<const std::string&>() != fn) {
      continue;
    }
    const auto params = def.find("parameters");
    if (params == def.end() || !params->is_object()) return "";
    const auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    const auto p = props->find(std::string(param));
    if (p == props->end() || !p->is_object()) return "";
    const auto type = p->find("type");
    if (type == p->end()) return "";
    if (type->is_string()) return type->get<std::string>();
    if (type->is_array()) {  // ["integer", "null"]: the first that is not null
      for (const auto& x : *type) {
        if (x.is_string() && x.get_ref<const std::string&>() != "null") return x.get<std::string>();
      }
    }
    return "";
  }
  return "";
}

nlohmann::json convert_value(const std::string& value, const std::string& type) {
  if (type.empty() || type == "string" || type == "str" || type == "text") return value;
  if (type == "boolean" || type == "bool") {
    if (value == "true" || value == "True") return true;
    if (value == "false" || value == "False") return false;
  }
  if (value == "None" || value == "null") {
    if (type == "null" || type == "object" || type == "array" || type == "integer" ||
        type == "number" || type == "boolean") {
      return nullptr;
    }
  }
  nlohmann::json j = parse_json(value);
  if (j.is_discarded()) return value;
  return j;
}

}  // namespace

bool parse_xml_call(std::string_view text, const nlohmann::json& tools, RawCall& out) {
  constexpr std::string_view kFn = "<function=";
  constexpr std::string_view kFnEnd = "</function>";
  constexpr std::string_view kParam = "<parameter=";
  constexpr std::string_view kParamEnd = "</parameter>";
  if (!text.starts_with(kFn)) return false;
  size_t gt = text.find('>');
  if (gt == std::string_view::npos) return false;
  const std::string name(trim(text.substr(kFn.size(), gt - kFn.size())));
  if (name.empty() || name.find_first_of("<\n") != std::string::npos) return false;
  nlohmann::json args = nlohmann::json::object();
  std::string_view rest = text.substr(gt + 1);
  for (;;) {
    rest = ltrim(rest);
    if (rest.starts_with(kFnEnd)) break;
    if (!rest.starts_with(kParam)) return false;  // unclosed or foreign text
    gt = rest.find('>');
    if (gt == std::string_view::npos) return false;
    const std::string pname(trim(rest.substr(kParam.size(), gt - kParam.size())));
    if (pname.empty() || pname.find_first_of("<\n") != std::string::npos) return false;
    rest = rest.substr(gt + 1);
    // The value ends at </parameter>, or (the model forgot it) at the next parameter or the end
    // of the function.
    const size_t fn_end = rest.find(kFnEnd);
    size_t end = rest.find(kParamEnd);
    if (end == std::string_view::npos || end > fn_end) end = std::min(rest.find(kParam), fn_end);
    if (end == std::string_view::npos) return false;
    std::string_view value = rest.substr(0, end);
    rest = rest.substr(end);
    if (rest.starts_with(kParamEnd)) rest.remove_prefix(kParamEnd.size());
    // The template writes "\n" + value + "\n".
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    if (value.ends_with('\r')) value.remove_suffix(1);
    args[pname] = convert_value(std::string(value), param_type(tools, name, pname));
  }
  out.name = name;
  out.arguments = dump_json(args);
  return true;
}

}  // namespace ridge::chat
