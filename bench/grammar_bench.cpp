// Structured-output cost per generated token: fill_mask + accept_token on the qwen2 vocabulary
// (151k tokens) while following a realistic JSON output, for (a) response_format json_object and
// (b) a nested schema with enums, arrays and strings (docs/grammar.md).
//   grammar_bench [google-benchmark flags]   (needs ../shared/vocab/ggml-vocab-qwen2.gguf)
// "Cold": a fresh Matcher per output (its state cache starts empty, as for a new request).
// "Warm": copies of one Matcher (they share its cache), i.e. the same grammar seen again.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_index.h"
#include "tokenizer/tokenizer.h"

namespace {

using ridge::grammar::Matcher;
using ridge::tokenizer::Tokenizer;

const std::filesystem::path kSourceDir =
    std::filesystem::path(__FILE__).parent_path().parent_path();
const std::string kVocab =
    (std::getenv("RIDGE_SHARED_DIR") ? std::filesystem::path(std::getenv("RIDGE_SHARED_DIR"))
                                     : kSourceDir.parent_path() / "shared") /
    "vocab/ggml-vocab-qwen2.gguf";

struct Vocab {
  Tokenizer tok;
  std::shared_ptr<const ridge::grammar::TokenIndex> index;
  double index_build_ms = 0;
};

const Vocab* vocab() {
  static const std::unique_ptr<Vocab> v = []() -> std::unique_ptr<Vocab> {
    auto f = ridge::gguf::File::open(kVocab);
    if (!f.ok()) return nullptr;
    auto t = Tokenizer::from_gguf(*f);
    if (!t.ok()) return nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> bytes(static_cast<size_t>(t->n_vocab()));
    for (int32_t i = 0; i < t->n_vocab(); ++i) {
      if (!t->is_special(i)) bytes[static_cast<size_t>(i)] = t->token_to_piece(i);
    }
    std::vector<int32_t> eog(t->eog_ids().begin(), t->eog_ids().end());
    auto index =
        std::make_shared<const ridge::grammar::TokenIndex>(std::move(bytes), std::move(eog));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::unique_ptr<Vocab>(new Vocab{std::move(t).value(), std::move(index), ms});
  }();
  return v.get();
}

const char* kObjectText = R"({
  "name": "Ada Lovelace",
  "born": 1815,
  "occupation": ["mathematician", "writer"],
  "known_for": "the first published algorithm intended to be carried out by a machine",
  "address": {"city": "London", "country": "United Kingdom"},
  "active": false,
  "score": 97.5,
  "notes": null
})";

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "title": {"type": "string", "maxLength": 120},
    "status": {"enum": ["draft", "published", "archived"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "authors": {"type": "array", "minItems": 1, "items": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "role": {"enum": ["lead", "contributor"]},
                     "orcid": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{4}$"}},
      "required": ["name", "role"], "additionalProperties": false}},
    "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
    "summary": {"type": "string"}
  },
  "required": ["title", "status", "tags", "authors", "year"],
  "additionalProperties": false
})";

// Properties in key order: nlohmann::json keeps object keys sorted (docs/grammar.md).
const char* kSchemaText = R"({
  "authors": [
    {"name": "Grace Hopper", "orcid": "0000-0002", "role": "lead"},
    {"name": "Jean E. Sammet", "role": "contributor"}
  ],
  "status": "published",
  "summary": "A short history of early programming languages, from FLOW-MATIC to COBOL, )"
    R"(and the people who designed them.",
  "tags": ["history", "compilers", "COBOL"],
  "title": "Programming languages of the 1950s",
  "year": 1961
})";

void follow(benchmark::State& state, const std::string& gbnf, const std::string& text, bool warm) {
  const Vocab* v = vocab();
  if (!v) {
    state.SkipWithError(("cannot load " + kVocab).c_str());
    return;
  }
  auto g = ridge::grammar::parse_gbnf(gbnf);
  if (!g.ok()) {
    state.SkipWithError(g.status().message().c_str());
    return;
  }
  auto ids = v->tok.encode(text, false, false);
  ids.push_back(v->index->eog_ids().at(0));
  const Matcher proto(*g, v->index);
  std::vector<uint8_t> mask;
  for (auto _ : state) {
    Matcher m = warm ? proto : Matcher(*g, v->index);
    for (int32_t t : ids) {
      m.fill_mask(mask);
      if (!mask[static_cast<size_t>(t)] || !m.accept_token(t).ok()) {
        state.SkipWithError(("token refused: " + v->tok.token_to_piece(t)).c_str());
        return;
      }
    }
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["tokens"] = static_cast<double>(ids.size());
  state.counters["per_token"] =
      benchmark::Counter(static_cast<double>(state.iterations() * ids.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["index_build_ms"] = v->index_build_ms;
}

std::string schema_gbnf() {
  auto r = ridge::grammar::json_schema_to_gbnf(nlohmann::json::parse(kSchema));
  return r.ok() ? *r : std::string("root ::= \"schema failed: ") + "\"";
}

void BM_JsonObjectCold(benchmark::State& s) {
  follow(s, ridge::grammar::any_json_object_gbnf(), kObjectText, false);
}
void BM_JsonObjectWarm(benchmark::State& s) {
  follow(s, ridge::grammar::any_json_object_gbnf(), kObjectText, true);
}
void BM_NestedSchemaCold(benchmark::State& s) { follow(s, schema_gbnf(), kSchemaText, false); }
void BM_NestedSchemaWarm(benchmark::State& s) { follow(s, schema_gbnf(), kSchemaText, true); }
BENCHMARK(BM_JsonObjectCold)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_JsonObjectWarm)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_NestedSchemaCold)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_NestedSchemaWarm)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_ParseSchemaGrammar(benchmark::State& state) {
  const auto schema = nlohmann::json::parse(kSchema);
  for (auto _ : state) {
    auto text = ridge::grammar::json_schema_to_gbnf(schema);
    auto g = ridge::grammar::parse_gbnf(*text);
    benchmark::DoNotOptimize(g.ok());
  }
}
BENCHMARK(BM_ParseSchemaGrammar)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
