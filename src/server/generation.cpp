#include "server/generation.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "base/timer.h"
#include "chat/chat_template.h"
#include "chat/constraint_grammar.h"
#include "grammar/json_schema.h"
#include "sampling/params.h"

namespace ridge::server {

using nlohmann::json;

namespace {

// "sampling: top_p = 1.5 is outside (0, 1]" -> "top_p".
std::string field_of_sampling_error(const std::string& message) {
  std::string_view m = message;
  if (m.starts_with("sampling: ")) m.remove_prefix(10);
  const size_t end = m.find_first_of(" [=:");
  return std::string(m.substr(0, end));
}

std::optional<ApiError> prompt_tokens(const ModelContext& model, PreparedRequest& out) {
  const tokenizer::Tokenizer& tok = *model.tokenizer;
  GenerationSpec& spec = out.spec;
  if (spec.endpoint == Endpoint::kChat) {
    if (!model.render_chat) return invalid_param("messages", "this model has no chat template");
    auto rendered = model.render_chat(spec.chat.conversation);
    if (!rendered.ok()) {
      const std::string& m = rendered.status().message();
      return invalid_param(m.starts_with("tools") ? "tools"
                           : m.starts_with("chat_template_kwargs") ? "chat_template_kwargs"
                                                                   : "messages", m);
    }
    out.starts_in_reasoning = rendered->starts_in_reasoning;
    out.reasoning_closed = rendered->reasoning_closed;
    // Message content is tokenized as text: special-token text in it stays text.
    out.prompt = chat::encode_prompt(tok, rendered->text);
  } else if (spec.prompt_is_tokens) {
    for (int32_t t : spec.prompt_tokens) {
      if (t >= tok.n_vocab()) {
        return invalid_param("prompt", fmt::format("token id {} is outside the vocabulary "
                                                   "(n_vocab = {})", t, tok.n_vocab()));
      }
    }
    out.prompt = spec.prompt_tokens;
    if (spec.echo) out.echo_prefix = tok.decode(out.prompt);
  } else {
    // A raw completion prompt is wholly the client's, special tokens included (as llama.cpp).
    out.prompt = tok.encode(spec.prompt_text, /*add_special=*/true, /*parse_special=*/true);
    if (spec.echo) out.echo_prefix = spec.prompt_text;
  }
  const char* field = spec.endpoint == Endpoint::kChat ? "messages" : "prompt";
  if (out.prompt.empty()) return invalid_param(field, fmt::format("'{}' is empty", field));
  const int64_t n_prompt = static_cast<int64_t>(out.prompt.size());
  if (n_prompt >= model.max_model_len) {
    ApiError e = invalid_param(field, fmt::format("the prompt has {} tokens; this model's "
                                                  "context (max-model-len) is {} tokens",
                                                  n_prompt, model.max_model_len));
    e.code = "context_length_exceeded";
    return e;
  }
  return std::nullopt;
}

// Through the engine's grammar cache (requests with the same grammar text share its compiled
// form and mask cache), or parsed here without an engine; token references (`<|end|>`,
// `<[id]>`) resolve against the model's vocabulary either way.
Result<std::shared_ptr<const grammar::Grammar>> compile_grammar(const ModelContext& model,
                                                                const std::string& gbnf,
                                                                const std::string& root) {
  if (model.engine != nullptr) {
    if (auto cache = model.engine->grammar_cache()) return cache->get(gbnf, root);
  }
  if (model.tokenizer == nullptr) return grammar::parse_gbnf(gbnf, root);
  const grammar::TokenResolver tokens = engine::grammar_token_resolver(*model.tokenizer);
  return grammar::parse_gbnf(gbnf, root, &tokens);
}

// The grammar the output must follow, compiled once per request: the client's own (`grammar`),
// JSON for response_format, or a tool call for tool_choice "required" / a named function. A chat
// model may reason first: JSON and tool calls follow its reasoning block.
std::optional<ApiError> output_grammar(const ModelContext& model, PreparedRequest& req) {
  using Kind = OutputConstraint::Kind;
  const GenerationSpec& spec = req.spec;
  const OutputConstraint& c = spec.constraint;
  const ChatOptions& chat_opts = spec.chat;
  const bool force_call = spec.endpoint == Endpoint::kChat && chat_opts.has_tools() &&
                          (chat_opts.tool_choice == ToolChoice::kRequired ||
                           chat_opts.tool_choice == ToolChoice::kFunction);
  if (c.kind == Kind::kNone && !force_call) return std::nullopt;
  if (c.kind != Kind::kNone && force_call) {
    return invalid_param("tool_choice", "a forced tool call ('tool_choice') cannot be combined "
                                        "with 'response_format', 'grammar' or 'regex'");
  }
  chat::ConstraintContext ctx;
  if (spec.endpoint == Endpoint::kChat) {
    ctx.format = model.output_format;
    ctx.starts_in_reasoning = req.starts_in_reasoning;
    ctx.reasoning_closed = req.reasoning_closed;
    ctx.allow_reasoning = model.separate_reasoning;
    if (ctx.format.tools == chat::OutputFormat::kHarmony && model.tokenizer != nullptr) {
      const int32_t end = model.tokenizer->find_token("<|end|>");
      ctx.harmony_end_stops = end < 0 || model.tokenizer->is_eog(end);
    }
  }
  const char* field = force_call                ? "tool_choice"
                      : c.kind == Kind::kGrammar ? "grammar"
                      : c.kind == Kind::kRegex   ? "regex"
                                                 : "response_format";
  std::string gbnf;
  std::string root = "root";
  if (force_call) {
    auto g = chat::tool_call_gbnf(chat_opts.conversation.tools,
                                  chat_opts.tool_choice == ToolChoice::kFunction
                                      ? std::string_view(chat_opts.tool_choice_name)
                                      : std::string_view(),
                                  chat_opts.parallel_tool_calls, ctx);
    if (!g.ok()) return invalid_param(field, g.status().message());
    gbnf = std::move(*g);
    root = chat::kConstraintRoot;
  } else if (c.kind == Kind::kGrammar) {
    gbnf = c.grammar;  // the client's grammar is the whole output
  } else {
    auto g = c.kind == Kind::kJsonObject ? Result<std::string>(grammar::any_json_object_gbnf())
             : c.kind == Kind::kRegex    ? grammar::regex_to_gbnf(c.grammar)
                                         : grammar::json_schema_to_gbnf_ordered(c.schema);
    if (!g.ok()) return invalid_param(field, g.status().message());
    gbnf = chat::after_reasoning(*g, ctx);
    root = chat::kConstraintRoot;
  }
  auto g = compile_grammar(model, gbnf, root);
  if (!g.ok()) {
    const std::string& m = g.status().message();
    if (c.kind != Kind::kGrammar && m.find("unknown token") != std::string::npos) {
      // A built-in grammar names the format's special tokens: this vocabulary lacks one.
      return invalid_param(field, fmt::format("this model's vocabulary lacks a special token of "
                                              "its output format ({}): {}",
                                              chat::output_format_name(ctx.format.tools), m));
    }
    return invalid_param(field, m);
  }
  req.grammar = std::move(*g);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> prepare_generation(const ModelContext& model, const std::string& body,
                                           Endpoint endpoint, const RequestLimits& limits,
                                           PreparedRequest& out) {
  out.arrival = now_seconds();
  nlohmann::ordered_json j;  // ordered: schemas and tools keep the client's key order
  if (auto e = parse_json_object(body, j)) return e;
  if (auto e = parse_generation_request(j, endpoint, limits, sampling::random_seed(), out.spec)) {
    return e;
  }
  GenerationSpec& spec = out.spec;
  if (!spec.model.empty() && spec.model != model.model_id) {
    ApiError e = not_found(fmt::format("The model '{}' does not exist (this server serves '{}')",
                                       spec.model, model.model_id),
                           "model_not_found");
    e.param = "model";
    return e;
  }
  if (auto e = prompt_tokens(model, out)) return e;
  if (auto e = output_grammar(model, out)) return e;
  if (out.grammar && spec.ignore_eos) {
    return invalid_param("ignore_eos", "'ignore_eos' cannot be combined with a grammar, regex, "
                                       "response_format or a forced tool call");
  }
  const int64_t room = model.max_model_len - static_cast<int64_t>(out.prompt.size());
  const char* max_key = j.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  if (spec.params.max_tokens > room) {
    ApiError e = invalid_param(max_key, fmt::format("'{}' = {} does not fit: the prompt has {} "
                                                    "tokens and max-model-len is {}",
                                                    max_key, spec.params.max_tokens,
                                                    out.prompt.size(), model.max_model_len));
    e.code = "context_length_exceeded";
    return e;
  }
  if (spec.params.max_tokens < 0) spec.params.max_tokens = static_cast<int32_t>(room);
  if (Status s = spec.params.validate(model.tokenizer->n_vocab()); !s.ok()) {
    return invalid_param(field_of_sampling_error(s.message()), s.message());
  }
  out.ids.endpoint = endpoint;
  out.ids.id = fmt::format("{}-{:016x}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                           sampling::random_seed());
  out.ids.created = static_cast<int64_t>(std::time(nullptr));
  out.ids.model = model.model_id;
  return std::nullopt;
}

void OutputChannel::push(int32_t choice, const engine::RequestOutput& out) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({choice, out});
  }
  cv_.notify_one();
}

void OutputChannel::take(std::vector<Event>& events, double timeout_s) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return !queue_.empty(); });
  while (!queue_.empty()) {
    events.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

namespace {

chat::ParserOptions parser_options(const ModelContext& model, const PreparedRequest& req) {
  chat::ParserOptions o;
  o.format = model.output_format;
  o.starts_in_reasoning = req.starts_in_reasoning;
  o.separate_reasoning = model.separate_reasoning;
  const ChatOptions& c = req.spec.chat;
  o.parse_tools = c.has_tools() && c.tool_choice != ToolChoice::kNone;
  if (o.parse_tools) o.tools = c.conversation.tools;
  return o;
}

// Appends `more` to `d`, joining argument fragments of the same call.
void append_delta(chat::OutputDelta& d, chat::OutputDelta&& more) {
  d.content += more.content;
  d.reasoning_content += more.reasoning_content;
  for (auto& c : more.tool_calls) {
    if (!d.tool_calls.empty() && d.tool_calls.back().index == c.index && c.id.empty() &&
        c.name.empty()) {
      d.tool_calls.back().arguments_fragment += c.arguments_fragment;
    } else {
      d.tool_calls.push_back(std::move(c));
    }
  }
}

}  // namespace

GenerationRun::GenerationRun(std::shared_ptr<const ModelContext> model, PreparedRequest req,
                             std::atomic<int64_t>* n_live_seqs)
    : model_(std::move(model)), req_(std::move(req)), n_live_seqs_(n_live_seqs),
      choices_(static_cast<size_t>(req_.spec.n)), ids_(choices_.size(), 0),
      done_(choices_.size(), false) {
  if (req_.spec.endpoint != Endpoint::kChat) return;
  const chat::ParserOptions opts = parser_options(*model_, req_);
  for (size_t i = 0; i < choices_.size(); ++i) {
    parsers_.push_back(std::make_unique<chat::OutputParser>(opts));
  }
}

void GenerationRun::parse_event(OutputChannel::Event& e) {
  if (parsers_.empty()) return;
  chat::OutputParser& p = *parsers_[e.choice];
  e.delta = p.push(e.out.text);
  if (e.out.finished()) append_delta(e.delta, p.finish());
  const bool one_call = !req_.spec.chat.parallel_tool_calls;  // later calls are dropped
  if (one_call) {
    std::erase_if(e.delta.tool_calls, [](const chat::ToolCallDelta& t) { return t.index > 0; });
  }
  if (!e.out.finished()) return;
  // The whole result is copied once, at the end (responses and finish reasons read it).
  ChoiceResult& c = choices_[e.choice];
  c.parsed = p.result();
  if (one_call && c.parsed.tool_calls.size() > 1) c.parsed.tool_calls.resize(1);
}

GenerationRun::~GenerationRun() { abort_all(); }

std::optional<ApiError> GenerationRun::start() {
  start_stats_ = model_->engine->stats();
  return submit(0);
}

std::optional<ApiError> GenerationRun::submit(int32_t choice) {
  engine::Request r;
  r.prompt_tokens = req_.prompt;
  r.add_special = false;
  r.parse_special = false;
  r.params = req_.spec.params;
  r.params.seed += static_cast<uint64_t>(choice);  // distinct samples per choice, reproducible
  r.priority = req_.spec.priority;
  r.n_logprobs = req_.spec.n_logprobs;
  r.ignore_eos = req_.spec.ignore_eos;
  r.grammar = req_.grammar;
  if (!req_.spec.prediction.empty()) {
    r.prediction = model_->tokenizer->encode(req_.spec.prediction, /*add_special=*/false, /*parse_special=*/false);
  }
  r.on_output = [ch = channel_, choice](const engine::RequestOutput& o) { ch->push(choice, o); };
  auto id = model_->engine->add_request(std::move(r));
  if (!id.ok()) {
    n_live_seqs_->fetch_sub(1);
    done_[choice] = true;
    choices_[choice].finish = engine::FinishReason::kError;
    if (id.status().is_usage()) return invalid_param("", id.status().message());
    return unavailable(id.status().message());
  }
  ids_[choice] = *id;
  return std::nullopt;
}

std::vector<OutputChannel::Event> GenerationRun::poll(double timeout_s) {
  std::vector<OutputChannel::Event> events;
  channel_->take(events, timeout_s);
  for (auto& e : events) {
    parse_event(e);
    ChoiceResult& c = choices_[e.choice];
    c.text += e.out.text;
    c.tokens.insert(c.tokens.end(), e.out.tokens.begin(), e.out.tokens.end());
    c.logprobs.insert(c.logprobs.end(), e.out.logprobs.begin(), e.out.logprobs.end());
    c.stats = e.out.stats;
    if (e.out.finished() && !done_[e.choice]) {
      c.finish = e.out.finish;
      done_[e.choice] = true;
      n_live_seqs_->fetch_sub(1);
    }
  }
  // Choice 0 produced output: its prompt blocks are published, the others can share them.
  if (ids_.size() > 1 && ids_[1] == 0 && !done_[1] && (!events.empty() || done_[0])) {
    for (int32_t i = 1; i < static_cast<int32_t>(ids_.size()); ++i) (void)submit(i);
  }
  return events;
}

void GenerationRun::abort_all() {
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (done_[i]) continue;
    done_[i] = true;
    n_live_seqs_->fetch_sub(1);  // submitted or not, the choice held a place
    if (ids_[i] != 0) {
      model_->engine->abort(ids_[i]);
      if (choices_[i].finish == engine::FinishReason::kNone) {
        choices_[i].finish = engine::FinishReason::kAbort;
      }
    }
  }
}

bool GenerationRun::finished() const {
  for (bool d : done_) {
    if (!d) return false;
  }
  return true;
}

Usage GenerationRun::usage() const {
  Usage u;
  u.prompt_tokens = static_cast<int64_t>(req_.prompt.size());
  for (const auto& c : choices_) u.completion_tokens += static_cast<int64_t>(c.tokens.size());
  u.cached_tokens = choices_[0].stats.n_cached_prompt_tokens;
  if (!req_.spec.prediction.empty()) {
    u.prediction = true;
    for (const auto& c : choices_) {
      u.accepted_prediction_tokens += c.stats.n_accepted_tokens;
      u.rejected_prediction_tokens += c.stats.n_draft_tokens - c.stats.n_accepted_tokens;
    }
  }
  return u;
}

json GenerationRun::timings() const {
  if (!end_stats_) end_stats_ = model_->engine->stats();
  const engine::RequestStats& s = choices_[0].stats;
  const double bytes = end_stats_->bytes_moved - start_stats_.bytes_moved;
  const double busy = end_stats_->busy_seconds - start_stats_.busy_seconds;
  const double gbs = busy > 0 ? bytes / busy / 1e9 : 0;
  double last_finish = 0;
  json cached = json::array();
  int64_t drafted = 0, accepted = 0;
  for (const auto& c : choices_) {
    last_finish = std::max(last_finish, c.stats.finish_time);
    cached.push_back(c.stats.n_cached_prompt_tokens);
    drafted += c.stats.n_draft_tokens;
    accepted += c.stats.n_accepted_tokens;
  }
  const double probed = model_->probed_gbs;
  return {{"queue_ms", s.queue_time() * 1e3},
          {"ttft_ms", s.ttft() * 1e3},
          {"total_ms", (last_finish > 0 ? last_finish - req_.arrival : now_seconds() - req_.arrival) * 1e3},
          {"decode_tokens_per_s", s.decode_tok_per_s()},
          {"prompt_tokens", req_.prompt.size()},
          {"cached_prompt_tokens_per_choice", std::move(cached)},
          {"preemptions", s.n_preemptions},
          {"draft_tokens", drafted},
          {"accepted_draft_tokens", accepted},
          {"engine_bytes_moved", bytes},
          {"engine_busy_ms", busy * 1e3},
          {"achieved_gbs", gbs},
          {"probed_gbs", probed},
          {"roof_fraction", probed > 0 ? gbs / probed : 0.0}};
}

}  // namespace ridge::server
