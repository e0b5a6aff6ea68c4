// The mask on the real qwen2 vocabulary (151k byte-level BPE tokens, many ending mid-character)
// against the slow reference, for states along JSON outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "gguf/reader.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar_test_util.h"
#include "tokenizer/tokenizer.h"

namespace ridge::grammar {
namespace {

const std::string kVocab = std::string(RIDGE_SHARED_DIR) + "/vocab/ggml-vocab-qwen2.gguf";

struct Qwen {
  tokenizer::Tokenizer tok;
  std::shared_ptr<const TokenIndex> index;
};

const Qwen* qwen() {
  static const std::unique_ptr<Qwen> q = []() -> std::unique_ptr<Qwen> {
    if (!std::filesystem::exists(kVocab)) return nullptr;
    auto f = gguf::File::open(kVocab);
    if (!f.ok()) return nullptr;
    auto t = tokenizer::Tokenizer::from_gguf(*f);
    if (!t.ok()) return nullptr;
    std::vector<std::string> bytes(static_cast<size_t>(t->n_vocab()));
    for (int32_t i = 0; i < t->n_vocab(); ++i) {
      if (!t->is_special(i)) bytes[static_cast<size_t>(i)] = t->token_to_piece(i);
    }
    std::vector<int32_t> eog(t->eog_ids().begin(), t->eog_ids().end());
    auto index = std::make_shared<const TokenIndex>(std::move(bytes), std::move(eog));
    return std::unique_ptr<Qwen>(new Qwen{std::move(t).value(), std::move(index)});
  }();
  return q.get();
}

#define NEED_QWEN()                                          \
  if (!qwen())                                               \
  GTEST_SKIP() << "qwen2 vocabulary not found at " << kVocab \
               << " (RIDGE_SHARED_DIR): the real-vocabulary mask test is skipped"

// Follows `text` (tokenized by qwen2) and compares fill_mask with the reference at every
// `every`-th step; then takes random allowed tokens for a few steps from the end state.
void follow_and_compare(const std::string& gbnf, const std::string& text, int every) {
  auto g = parse_gbnf(gbnf);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const auto ids = qwen()->tok.encode(text, false, false);
  Matcher m(*g, qwen()->index);
  std::vector<uint8_t> mask;
  std::mt19937 rng(3);
  int compared = 0;
  for (size_t i = 0; i <= ids.size() + 4; ++i) {
    m.fill_mask(mask);
    if (i % static_cast<size_t>(every) == 0 || i >= ids.size()) {
      ASSERT_EQ(mask, reference_mask(m, qwen()->index->n_vocab())) << "step " << i;
      ++compared;
    }
    int32_t t = -1;
    if (i < ids.size()) {
      t = ids[i];
      ASSERT_TRUE(mask[static_cast<size_t>(t)])
          << "token " << t << " '" << qwen()->tok.token_to_piece(t) << "' masked out at step " << i;
    } else {
      std::vector<int32_t> allowed;
      for (size_t k = 0; k < mask.size(); ++k) {
        if (mask[k]) allowed.push_back(static_cast<int32_t>(k));
      }
      if (allowed.empty()) break;
      t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    }
    ASSERT_TRUE(m.accept_token(t).ok());
    if (m.finished()) break;
  }
  EXPECT_GT(compared, 3);
}

TEST(Qwen2Mask, JsonObjectMatchesReference) {
  NEED_QWEN();
  follow_and_compare(
      any_json_object_gbnf(),
      "{\n  \"name\": \"Zoë 中文 😀\",\n  \"tags\": [\"a\", \"b\\n\"],\n  \"n\": -1.5e3,\n"
      "  \"ok\": true, \"nil\": null}",
      4);
}

TEST(Qwen2Mask, SchemaAndUnicodeGrammarMatchReference) {
  NEED_QWEN();
  auto schema = json_schema_to_gbnf(nlohmann::json::parse(R"j({
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12},
                   "kind": {"enum": ["town", "village"]},
                   "pop": {"type": "integer", "minimum": 0, "maximum": 100000}},
    "required": ["city", "kind"], "additionalProperties": false})j"));
  ASSERT_TRUE(schema.ok()) << schema.status().message();
  follow_and_compare(*schema, R"({"city": "Zürich", "kind": "town", "pop": 4200})", 3);
  follow_and_compare(R"g(root ::= [一-龥]{1,6} "。" | "é"+)g", "中文字。", 1);
}

TEST(Qwen2Mask, EogOnlyWhenComplete) {
  NEED_QWEN();
  auto g = parse_gbnf(R"g(root ::= "yes" | "no")g");
  ASSERT_TRUE(g.ok());
  Matcher m(*g, qwen()->index);
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  const int32_t eos = qwen()->index->eog_ids().at(0);
  EXPECT_FALSE(mask[static_cast<size_t>(eos)]);
  for (int32_t t : qwen()->tok.encode("yes", false, false)) ASSERT_TRUE(m.accept_token(t).ok());
  m.fill_mask(mask);
  for (int32_t e : qwen()->index->eog_ids()) EXPECT_TRUE(mask[static_cast<size_t>(e)]);
  EXPECT_EQ(std::count(mask.begin(), mask.end(), 1),
            static_cast<long>(qwen()->index->eog_ids().size()));
  // Control tokens (passed as "") are never allowed.
  const int32_t im_start = qwen()->tok.find_token("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_FALSE(mask[static_cast<size_t>(im_start)]);
}

}  // namespace
}  // namespace ridge::grammar
