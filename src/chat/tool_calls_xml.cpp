// Qwen3-Coder / Qwen3.5 XML tool calls:
//   <function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>
// Streamed: the call is committed at the name's '>', a parameter is sent once its value has
// ended, "}" at </function>; cut or malformed after the name, the call keeps what was sent.
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

constexpr std::string_view kFn = "<function=";
constexpr std::string_view kFnEnd = "</function>";
constexpr std::string_view kParam = "<parameter=";
constexpr std::string_view kParamEnd = "</parameter>";

// A name between "=" and ">": trimmed, not empty, on one line and without a tag in it.
bool tag_name(std::string_view text, std::string& out) {
  out = std::string(trim(text));
  return !out.empty() && out.find_first_of("<\n") == std::string::npos;
}

}  // namespace

void XmlCallStream::scan(std::string_view body, CallSink& sink) {
  for (;;) {
    switch (st_) {
      case St::kName: {
        const size_t gt = body.find('>', kFn.size());
        if (gt == std::string_view::npos) return;
        if (!tag_name(body.substr(kFn.size(), gt - kFn.size()), name_)) {
          st_ = St::kError;
          return;
        }
        sink.begin(name_, "");
        committed_ = true;
        pos_ = gt + 1;
        st_ = St::kBetween;
        break;
      }
      case St::kBetween: {
        while (pos_ < body.size() && is_space(body[pos_])) ++pos_;
        const std::string_view rest = body.substr(pos_);
        if (rest.starts_with(kFnEnd)) {
          sink.args(any_param_ ? "}" : "{}");
          st_ = St::kDone;
          return;
        }
        if (rest.starts_with(kParam)) {
          pos_ += kParam.size();
          st_ = St::kParamName;
          break;
        }
        // Foreign text between parameters: malformed, the call ends with what was sent.
        if (!kFnEnd.starts_with(rest) && !kParam.starts_with(rest)) st_ = St::kError;
        return;
      }
      case St::kParamName: {
        const size_t gt = body.find('>', pos_);
        if (gt == std::string_view::npos) return;
        if (!tag_name(body.substr(pos_, gt - pos_), param_)) {
          st_ = St::kError;
          return;
        }
        pos_ = scan_ = gt + 1;
        st_ = St::kValue;
        break;
      }
      case St::kValue: {
        // The value ends at </parameter>, or (the model forgot it) at the next parameter or the
        // end of the function.
        const size_t pend = body.find(kParamEnd, scan_);
        const size_t fend = body.find(kFnEnd, scan_);
        if (pend == std::string_view::npos && fend == std::string_view::npos) {
          scan_ = std::max(scan_, body.size() - std::min(body.size(), kParamEnd.size() - 1));
          return;
        }
        size_t end = pend;
        size_t next = pend + kParamEnd.size();
        if (pend == std::string_view::npos || (fend != std::string_view::npos && fend < pend)) {
          end = next = std::min(body.find(kParam, pos_), fend);
        }
        send_param(body.substr(pos_, end - pos_), sink);
        pos_ = next;
        st_ = St::kBetween;
        break;
      }
      case St::kDone:
      case St::kError: return;
    }
  }
}

void XmlCallStream::send_param(std::string_view value, CallSink& sink) {
  // The template writes "\n" + value + "\n".
  if (value.starts_with('\n')) value.remove_prefix(1);
  if (value.ends_with('\n')) value.remove_suffix(1);
  if (value.ends_with('\r')) value.remove_suffix(1);
  std::string frag(any_param_ ? "," : "{");
  frag += dump_json(param_);
  frag += ':';
  frag += dump_json(convert_value(std::string(value), param_type(tools_, name_, param_)));
  sink.args(frag);
  any_param_ = true;
}

void XmlCallStream::close(CallSink& sink) {
  if (!committed_ || st_ == St::kDone) return;
  sink.args(any_param_ ? "}" : "{}");
  st_ = St::kDone;
}

}  // namespace ridge::chat
