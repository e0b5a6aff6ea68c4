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
#include "tokenizer/chat_template.h"

namespace ridge::cli {
namespace {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// One assistant turn: evaluates the new part of the rendered conversation, then generates.
// `cached` mirrors the tokens in the session's KV cache.
Status turn(Loaded& l, const tokenizer::ChatTemplate& tmpl, sampling::Sampler& sampler,
            const GenerationOptions& o, std::vector<tokenizer::ChatMessage>& messages,
            std::vector<int32_t>& cached) {
  // What the user typed is text: "<|im_end|>" in it must not end their turn.
  const tokenizer::MarkedText text = tmpl.render(messages, /*add_generation_prompt=*/true);
  const std::vector<int32_t> tokens = l.tok->encode_marked(text, /*add_special=*/true);
  const int64_t n_ctx = l.session->n_ctx();
  if (static_cast<int64_t>(tokens.size()) >= n_ctx) {
    messages.pop_back();
    return error("the conversation needs {} tokens, the context holds {} (/reset or raise -c)",
                 tokens.size(), n_ctx);
  }
  // Re-tokenizing earlier answers may differ from the sampled ids: keep only what matches.
  size_t keep = common_prefix(cached, tokens);
  if (keep == tokens.size()) --keep;  // always evaluate at least one token for fresh logits
  l.session->truncate(static_cast<int64_t>(keep));
  cached.resize(keep);
  const std::span<const int32_t> fresh(tokens.data() + keep, tokens.size() - keep);
  RIDGE_ASSIGN_OR_RETURN(auto logits, l.session->eval(fresh, *l.pool));
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
  // Each decode step evaluated one generated token, in order; the last one sampled may not be.
  cached.insert(cached.end(), generated.begin(), generated.begin() + st.n_decode_steps);
  RIDGE_CHECK(static_cast<int64_t>(cached.size()) == l.session->n_past());
  if (st.context_full) log_warn("the context of {} tokens is full: /reset to start over", n_ctx);
  messages.push_back({"assistant", answer});
  return ok_status();
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  CLI::App app("Chat with a GGUF model (commands: /reset, /exit).", "chat");
  GenerationOptions o;
  std::string system_prompt, template_name;
  add_generation_options(app, o);
  app.add_option("--system", system_prompt, "system message");
  app.add_option("--chat-template", template_name, "chatml, llama3, llama2 or plain (default: from the model)");
  o.n_predict = 1024;
  if (auto rc = parse(app, argc, argv)) return *rc;

  tokenizer::ChatTemplate tmpl;
  if (!template_name.empty()) {
    auto t = tokenizer::ChatTemplate::from_name(template_name);
    if (!t.ok()) return report(t.status());
    tmpl = *t;
  }
  auto loaded = load_for_generation(o);
  if (!loaded.ok()) return report(loaded.status());
  Loaded& l = *loaded;
  if (template_name.empty()) {
    tmpl = tokenizer::ChatTemplate::from_gguf(l.model->file(), l.tok.get());
    if (!tmpl.recognised()) log_warn("no known chat template in {}: using plain text", o.model_path);
  }
  auto sampler = sampling::Sampler::create(o.sampling, static_cast<int32_t>(l.model->config().n_vocab));
  if (!sampler.ok()) return report(sampler.status());

  const bool interactive = isatty(STDIN_FILENO) != 0;
  std::vector<tokenizer::ChatMessage> messages;
  auto reset = [&] {
    messages.clear();
    if (!system_prompt.empty()) messages.push_back({"system", system_prompt});
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
    messages.push_back({"user", line});
    Status s = turn(l, tmpl, *sampler, o, messages, cached);
    if (!s.ok()) fmt::print(stderr, "ridge: error: {}\n", s.message());
  }
  return 0;
}

}  // namespace ridge::cli
