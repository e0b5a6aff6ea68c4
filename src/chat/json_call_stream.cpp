// Incremental JSON calls: a call's arguments value and the {"name", "arguments"} call object.
#include "chat/json_stream.h"

namespace ridge::chat {

ArgsStream::Status ArgsStream::feed(char c) {
  if (error_ || done_) return Status::kError;
  if (!started_ && !is_space(c)) {
    started_ = true;
    string_form_ = c == '"';
    if (c != '{' && c != '"') {
      error_ = true;
      return Status::kError;
    }
  }
  const Status s = m_.feed(c);
  if (s == Status::kError) error_ = true;
  if (s != Status::kDone) return s;
  if (string_form_) {  // the string's value must be an object's text
    const nlohmann::json str = parse_json(m_.take());
    JsonMinifier inner;
    Status st = Status::kMore;
    bool object = false;
    for (char ch : str.is_string() ? str.get_ref<const std::string&>() : std::string()) {
      if (st == Status::kDone) {
        if (is_space(ch)) continue;
        st = Status::kError;
        break;
      }
      if (!object && !is_space(ch)) object = ch == '{';
      st = inner.feed(ch);
      if (st == Status::kError) break;
    }
    if (!object || st != Status::kDone) {
      error_ = true;
      return Status::kError;
    }
    text_ = inner.take();
  }
  done_ = true;
  return Status::kDone;
}

bool ArgsStream::ready() const {
  return done_ || (!error_ && !string_form_ && m_.significant() >= 2);
}

void ArgsStream::send(CallSink& sink) {
  std::string t = string_form_ ? std::exchange(text_, {}) : m_.take();
  if (t.empty()) return;
  sink.args(t);
  sent_any_ = true;
}

void ArgsStream::close(CallSink& sink) {
  if (done_) return;
  if (!string_form_) send(sink);
  sink.args(sent_any_ ? m_.closers() : "{}");
  done_ = true;
}

bool known_tool(const nlohmann::json& tools, const std::string& name) {
  if (!tools.is_array() || tools.empty()) return true;  // nothing to check against
  for (const auto& t : tools) {
    if (!t.is_object()) continue;
    const auto f = t.find("function");
    const nlohmann::json& def = (f != t.end() && f->is_object()) ? *f : t;
    const auto n = def.find("name");
    if (n != def.end() && n->is_string() && n->get_ref<const std::string&>() == name) return true;
  }
  return false;
}

CallObjectStream::Status CallObjectStream::feed(char c, CallSink& sink) {
  switch (st_) {
    case St::kStart:
      if (is_space(c)) return Status::kMore;
      if (c != '{') return fail();
      st_ = St::kKey;
      return Status::kMore;
    case St::kKey:
      if (is_space(c)) return Status::kMore;
      if (c == '}' && first_key_) return end_object(sink);
      if (c != '"') return fail();
      key_ = JsonMinifier();
      key_.feed(c);
      st_ = St::kKeyString;
      return Status::kMore;
    case St::kKeyString: {
      const Status s = key_.feed(c);
      if (s == Status::kError) return fail();
      if (s == Status::kMore) return Status::kMore;
      const nlohmann::json k = parse_json(key_.take());
      const std::string key = k.is_string() ? k.get<std::string>() : std::string();
      field_ = Field::kOther;
      if (key == "name") {
        if (named_) return fail();
        field_ = Field::kName;
      } else if (key == "arguments" || key == "parameters") {
        if (args_seen_) return fail();
        field_ = Field::kArgs;
        args_seen_ = true;
      } else if (key == "id" && rules_.keep_id) {
        field_ = Field::kId;
      } else if (key == "type" && rules_.check_type) {
        field_ = Field::kType;
      }
      st_ = St::kColon;
      return Status::kMore;
    }
    case St::kColon:
      if (is_space(c)) return Status::kMore;
      if (c != ':') return fail();
      value_ = JsonMinifier();
      st_ = St::kValue;
      return Status::kMore;
    case St::kValue: {
      if (field_ == Field::kArgs) {
        const Status s = args_.feed(c);
        if (s == Status::kError) return fail();
        if (committed_) {
          args_.send(sink);
        } else {
          try_commit(sink);
        }
        if (s == Status::kDone) st_ = St::kAfter;
        return Status::kMore;
      }
      const Status s = value_.feed(c);
      if (s == Status::kError) return fail();
      if (field_ == Field::kOther) value_.take();  // validated, not kept
      if (s == Status::kMore) return Status::kMore;
      if (value_end(sink) == Status::kError) return Status::kError;
      st_ = St::kAfter;
      return s == Status::kEnded ? feed(c, sink) : Status::kMore;
    }
    case St::kAfter:
      if (is_space(c)) return Status::kMore;
      if (c == '}') return end_object(sink);
      if (c != ',') return fail();
      first_key_ = false;
      st_ = St::kKey;
      return Status::kMore;
    case St::kDone:
    case St::kError: break;
  }
  return fail();
}

CallObjectStream::Status CallObjectStream::value_end(CallSink& sink) {
  const nlohmann::json v = parse_json(value_.take());
  switch (field_) {
    case Field::kName:
      if (!v.is_string() || v.get_ref<const std::string&>().empty()) return fail();
      name_ = v.get<std::string>();
      named_ = true;
      if (rules_.tools != nullptr && !known_tool(*rules_.tools, name_)) return fail();
      try_commit(sink);
      break;
    case Field::kId:
      if (v.is_string() && !committed_) id_ = v.get<std::string>();
      break;
    case Field::kType:
      if (v != "function") return fail();
      break;
    default: break;
  }
  return Status::kMore;
}

CallObjectStream::Status CallObjectStream::end_object(CallSink& sink) {
  if (!committed_) {
    if (!named_ || args_seen_ || rules_.arguments_required) return fail();
    sink.begin(name_, id_);  // no arguments: an empty object
    sink.args("{}");
    committed_ = true;
  }
  st_ = St::kDone;
  return Status::kDone;
}

void CallObjectStream::try_commit(CallSink& sink) {
  if (committed_ || !named_ || !args_seen_ || !args_.ready()) return;
  sink.begin(name_, id_);
  committed_ = true;
  args_.send(sink);
}

void CallObjectStream::close(CallSink& sink) {
  if (committed_ && args_seen_) args_.close(sink);
}

}  // namespace ridge::chat
