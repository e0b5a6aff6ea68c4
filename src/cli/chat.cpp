// ridge chat: interactive multi-turn chat. The conversation is rendered with the model's chat
// template each turn; the KV cache keeps every earlier turn, so only the tokens after the
// longest common prefix with what is already cached are evaluated. Works with piped stdin.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/generation.h"
#include "chat/chat_template.h"
#include "chat/output_parser.h"
#include "cli/chat_options.h"

namespace ridge::cli {
namespace {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// One assistant turn: evaluates the new part of the rendered conversation, then generates.
// `cached` mirrors the tokens in the session's KV cache.
Status turn(Loaded& l, const chat::ChatTemplate& tmpl, const ChatTemplateArgs& targs,
            sampling::Sampler& sampler, const GenerationOptions& o, chat::Conversation& conv,
            std::vector<int32_t>& cached) {
  // What the user typed is text: "<|im_end|>" in it must not end their turn.
  auto rendered = tmpl.render(conv);
  if (!rendered.ok()) {
    conv.messages.erase(conv.messages.end() - 1);
    return rendered.status();
  }
  const std::vector<int32_t> tokens = chat::encode_prompt(*l.tok, rendered->text);
  const int64_t n_ctx = l.session->n_ctx();
  if (static_cast<int64_t>(tokens.size()) >= n_ctx) {
    conv.messages.erase(conv.messages.end() - 1);
    return error("the conversation needs {} tokens, the context holds {} (/reset or raise -c)",
                 tokens.size(), n_ctx);
  }
  // Re-tokenizing earlier answers may differ from the sampled ids: keep only what matches.
  size_t keep = common_prefix(cached, tokens);
  if (keep == tokens.size()) --keep;  // always evaluate at least one token for fresh logits
  keep = static_cast<size_t>(l.session->truncate(static_cast<int64_t>(keep)));  // 0: no rollback
  cached.resize(keep);
  const std::span<const int32_t> fresh(tokens.data() + keep, tokens.size() - keep);
  RIDGE_ASSIGN_OR_RETURN(auto logits, l.session->eval(fresh));
  cached.insert(cached.end(), fresh.begin(), fresh.end());

  std::vector<int32_t> history = tokens;
  std::vector<int32_t> generated;
  std::string answer;
  const int64_t room = n_ctx - l.session->n_past();
  RIDGE_ASSIGN_OR_RETURN(
      auto st, generate(l, sampler, logits, history, std::min(o.n_predict, room), o.sampling.stop,
                        [&](std::string_view piece) {
                          answer += piece;
                          fmt::print("{}", piece);
                          std::fflush(stdout);
                        },
                        &generated));
  fmt::print("\n");
  std::fflush(stdout);
  // The generated tokens in the cache: all but the last one sampled, in order.
  cached.insert(cached.end(), generated.begin(), generated.begin() + st.n_evaluated);
  RIDGE_CHECK(static_cast<int64_t>(cached.size()) == l.session->n_past());
  if (st.context_full) log_warn("the context of {} tokens is full: /reset to start over", n_ctx);
  // The history keeps the answer as the template expects it: reasoning apart from the content.
  chat::ParserOptions po;
  po.format = tmpl.output_format();
  po.starts_in_reasoning = rendered->starts_in_reasoning;
  po.separate_reasoning = targs.separate_reasoning();
  po.parse_tools = false;
  const chat::ParsedOutput parsed = chat::parse_output(answer, po);
  nlohmann::ordered_json msg = {{"role", "assistant"}, {"content", parsed.content}};
  if (!parsed.reasoning_content.empty()) msg["reasoning_content"] = parsed.reasoning_content;
  conv.messages.push_back(std::move(msg));
  return ok_status();
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  CLI::App app("Chat with a GGUF model (commands: /reset, /exit).", "chat");
  GenerationOptions o;
  std::string system_prompt;
  ChatTemplateArgs targs;
  add_generation_options(app, o);
  app.add_option("--system", system_prompt, "system message");
  add_chat_template_flags(app, targs);
  o.n_predict = 1024;
  if (auto rc = parse(app, argc, argv)) return *rc;

  auto loaded = load_for_generation(o);
  if (!loaded.ok()) return report(loaded.status());
  Loaded& l = *loaded;
  auto tmpl = load_chat_template(l.model->file(), *l.tok, targs);
  if (!tmpl.ok()) return report(tmpl.status());
  auto sampler = sampling::Sampler::create(o.sampling, static_cast<int32_t>(l.model->config().n_vocab));
  if (!sampler.ok()) return report(sampler.status());

  const bool interactive = isatty(STDIN_FILENO) != 0;
  chat::Conversation conv;
  conv.kwargs = targs.kwargs;
  auto reset = [&] {
    conv.messages = nlohmann::ordered_json::array();
    if (!system_prompt.empty()) {
      conv.messages.push_back({{"role", "system"}, {"content", system_prompt}});
    }
  };
  reset();
  std::vector<int32_t> cached;
  std::string line;
  for (;;) {
    if (interactive) {
      fmt::print("> ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      reset();
      cached.clear();
      l.session->reset();
      if (interactive) fmt::print("(conversation reset)\n");
      continue;
    }
    if (line.empty()) continue;
    conv.messages.push_back({{"role", "user"}, {"content", line}});
    Status s = turn(l, *tmpl, targs, *sampler, o, conv, cached);
    if (!s.ok()) fmt::print(stderr, "ridge: error: {}\n", s.message());
  }
  return 0;
}

}  // namespace ridge::cli
