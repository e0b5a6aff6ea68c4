#include "chat/jinja/template.h"

#include <fmt/format.h>

#include "chat/jinja/evaluator.h"
#include "chat/jinja/parser.h"

namespace ridge::chat::jinja {

Result<Template> Template::parse(std::string_view source) {
  try {
    RIDGE_ASSIGN_OR_RETURN(auto ast, parse_template(source));
    return Template(std::move(ast));
  } catch (const std::exception& e) {
    return Status::usage(fmt::format("chat template: {}", e.what()));
  }
}

Result<tokenizer::MarkedText> Template::render(const nlohmann::ordered_json& trusted,
                                               const nlohmann::ordered_json& untrusted,
                                               const RenderOptions& opts) const {
  if (!ast_) return Status::usage("chat template: not parsed (moved-from Template)");
  try {
    auto globals = std::make_shared<Scope>();
    add_builtins(globals.get());
    for (const auto* src : {&trusted, &untrusted}) {
      if (src->is_null()) continue;
      if (!src->is_object()) return Status::usage("chat template variables must be an object");
      bool literal = src == &untrusted;
      for (auto it = src->begin(); it != src->end(); ++it) {
        if (literal && trusted.is_object() && trusted.contains(it.key())) {
          return Status::usage(
              fmt::format("chat template variable '{}' is both trusted and untrusted", it.key()));
        }
        RIDGE_ASSIGN_OR_RETURN(Value v, from_json(it.value(), literal));
        globals->set(it.key(), std::move(v));
      }
    }
    auto root = std::make_shared<Scope>();
    root->parent = globals;
    Renderer r(opts.now_unix);
    TString out;
    RIDGE_RETURN_IF_ERROR(r.exec(ast_->body, root, &out));
    tokenizer::MarkedText m;
    size_t pos = 0;
    for (const auto& [b, e] : out.spans) {
      m.append_markup(std::string_view(out.s).substr(pos, b - pos));
      m.append_literal(std::string_view(out.s).substr(b, e - b));
      pos = e;
    }
    m.append_markup(std::string_view(out.s).substr(pos));
    return m;
  } catch (const std::exception& e) {
    return Status::usage(fmt::format("chat template: {}", e.what()));
  }
}

}  // namespace ridge::chat::jinja
