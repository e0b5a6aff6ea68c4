// A real Engine behind a real Server, without a model: a byte-level SPM tokenizer and a fake
// runner whose greedy next token is a hash of the whole context (read back through the KV block
// table), so any KV mix-up between concurrent requests changes the text. Steps can be slowed
// down to test disconnects, timeouts and queue limits.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "chat/chat_template.h"
#include "server/server.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace ridge::server::testing {

// The built-in ChatML renderer (the fallback for models without a Jinja template).
inline std::function<Result<chat::RenderedPrompt>(const chat::Conversation&)> chatml_renderer() {
  auto style = tokenizer::ChatTemplate::from_name("chatml");
  return [t = chat::ChatTemplate::builtin(*style)](const chat::Conversation& c) {
    return t.render(c);
  };
}

// The ChatML prompt of one user message, as the server renders it.
inline tokenizer::MarkedText chatml_prompt(const std::string& user) {
  chat::Conversation c;
  c.messages.push_back({{"role", "user"}, {"content", user}});
  return chatml_renderer()(c)->text;
}

// <unk> <s> </s> <|im_start|> <|im_end|>, then the 256 byte tokens (id 5 + byte), then the
// `extra` control tokens (an output format's markers).
inline tokenizer::Tokenizer byte_tokenizer(const std::vector<std::string>& extra = {}) {
  tokenizer::VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"};
  d.token_types = {2, 3, 3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    d.tokens.push_back(fmt::format("<0x{:02X}>", b));
    d.token_types.push_back(6);
  }
  for (const std::string& t : extra) {
    d.tokens.push_back(t);
    d.token_types.push_back(3);
  }
  d.scores.assign(d.tokens.size(), 0.0f);
  d.bos = 1;
  d.eos = 2;
  d.eot = 4;
  d.add_bos = true;
  d.add_space_prefix = false;
  auto t = tokenizer::Tokenizer::from_vocab_data(std::move(d), "test");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(t).value();
}

constexpr int32_t kByteBase = 5;

class SlowFakeRunner final : public engine::Runner {
 public:
  SlowFakeRunner(int32_t n_blocks, int32_t block_size, int32_t n_vocab)
      : n_blocks_(n_blocks), block_size_(block_size), n_vocab_(n_vocab),
        tokens_(static_cast<size_t>(n_blocks * block_size), -1),
        positions_(static_cast<size_t>(n_blocks * block_size), -1) {}

  Result<std::span<const float>> run(const model::Batch& b) override {
    RIDGE_RETURN_IF_ERROR(b.validate(n_vocab_, n_blocks_, block_size_));
    if (const int ms = step_ms.load(); ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    for (size_t t = 0; t < b.tokens.size(); ++t) {
      tokens_[static_cast<size_t>(b.slots[t])] = b.tokens[t];
      positions_[static_cast<size_t>(b.slots[t])] = b.positions[t];
    }
    logits_.assign(static_cast<size_t>(b.n_outputs() * n_vocab_), 0.0f);
    size_t row = 0;
    for (size_t t = 0; t < b.tokens.size(); ++t) {
      if (!b.need_logits[t]) continue;
      const auto table = b.block_table(b.seq_index[t]);
      uint64_t h = 1469598103934665603ull;
      for (int32_t p = 0; p <= b.positions[t]; ++p) {
        const auto slot = static_cast<size_t>(table[static_cast<size_t>(p / block_size_)] * block_size_ + p % block_size_);
        if (positions_[slot] != p) return error("fake runner: slot {} holds position {}, not {}", slot, positions_[slot], p);
        h = (h ^ static_cast<uint64_t>(tokens_[slot])) * 1099511628211ull;
      }
      float* l = logits_.data() + row * static_cast<size_t>(n_vocab_);
      // A graded distribution over the letters (for sampling and logprobs), peaked at one.
      for (int c = 0; c < 26; ++c) l[kByteBase + 'a' + c] = static_cast<float>((h >> c) & 3);
      l[kByteBase + ' '] = 1.0f;
      const int32_t best = (h % 7 == 0) ? kByteBase + ' ' : kByteBase + 'a' + static_cast<int32_t>(h % 26);
      l[best] = 12.0f;
      ++row;
    }
    return std::span<const float>(logits_);
  }
  int32_t n_vocab() const override { return n_vocab_; }
  int32_t n_blocks() const override { return n_blocks_; }
  int32_t block_size() const override { return block_size_; }

  std::atomic<int> step_ms{0};

 private:
  int32_t n_blocks_, block_size_, n_vocab_;
  std::vector<int32_t> tokens_, positions_;
  std::vector<float> logits_;
};

// Engine + server on a free loopback port, torn down in order.
class TestServer {
 public:
  explicit TestServer(ServerOptions sopts = {}, engine::EngineOptions eopts = default_engine(),
                      int32_t n_blocks = 256, bool ready = true,
                      const std::vector<std::string>& extra_tokens = {})
      : tok_(byte_tokenizer(extra_tokens)) {
    auto runner = std::make_unique<SlowFakeRunner>(n_blocks, eopts.block_size, tok_.n_vocab());
    runner_ = runner.get();
    auto eng = engine::Engine::create(std::move(runner), &tok_, eopts);
    EXPECT_TRUE(eng.ok()) << eng.status().message();
    engine_ = std::move(eng).value();
    engine_thread_ = std::thread([this] { engine_->run_loop(); });
    sopts.host = "127.0.0.1";
    sopts.port = 0;
    server_ = std::make_unique<Server>(sopts);
    EXPECT_TRUE(server_->bind().ok());
    http_thread_ = std::thread([this] { server_->run(); });
    if (ready) make_ready();
  }
  ~TestServer() {
    server_->stop();
    http_thread_.join();
    engine_->stop(false);
    engine_thread_.join();
  }

  static engine::EngineOptions default_engine() {
    engine::EngineOptions o;
    o.max_model_len = 256;
    o.max_seqs = 8;
    o.block_size = 4;
    o.max_batched_tokens = 128;
    return o;
  }

  // Publishes the model; `edit` may change the context first (chat template, output format).
  void make_ready(const std::function<void(ModelContext&)>& edit = {}) {
    ModelContext ctx;
    ctx.engine = engine_.get();
    ctx.tokenizer = &tok_;
    ctx.model_id = "test-model";
    ctx.max_model_len = engine_->budget().max_model_len;
    ctx.max_seqs = engine_->options().max_seqs;
    ctx.render_chat = chatml_renderer();
    if (edit) edit(ctx);
    server_->set_model(std::move(ctx));
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    return c;
  }
  // POST a JSON body; returns status and parsed body (null when not JSON).
  std::pair<int, nlohmann::json> post(const std::string& path, const std::string& body,
                                      const httplib::Headers& headers = {}) const {
    auto c = client();
    auto r = c.Post(path.c_str(), headers, body, "application/json");
    if (!r) return {-1, nullptr};
    return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
  }
  // Waits until no sequence holds a KV block (true) or gives up after `seconds`.
  bool wait_idle(double seconds = 5) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      const auto s = engine_->stats();
      if (s.kv_blocks_used == 0 && s.n_running == 0 && s.n_waiting == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  Server& server() { return *server_; }
  engine::Engine& engine() { return *engine_; }
  SlowFakeRunner& runner() { return *runner_; }
  const tokenizer::Tokenizer& tok() const { return tok_; }
  int port() const { return server_->port(); }

 private:
  tokenizer::Tokenizer tok_;
  SlowFakeRunner* runner_ = nullptr;
  std::unique_ptr<engine::Engine> engine_;
  std::thread engine_thread_;
  std::unique_ptr<Server> server_;
  std::thread http_thread_;
};

// A greedy chat request for the test model: `text` as the user message, 12 tokens, no EOS;
// `extra` adds or replaces fields.
inline std::string chat_body(const std::string& text,
                             nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json j = {{"model", "test-model"},
                      {"messages", {{{"role", "user"}, {"content", text}}}},
                      {"temperature", 0},
                      {"max_tokens", 12},
                      {"ignore_eos", true}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j.dump();
}

// The data: payloads of an SSE body ("[DONE]" included); fails the test on bad framing.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated SSE event at " << pos;
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << "event without 'data: ': " << ev;
    out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

}  // namespace ridge::server::testing
