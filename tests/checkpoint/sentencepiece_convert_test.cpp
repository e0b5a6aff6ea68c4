// tokenizer.model (SentencePiece) into GGUF tokenizer metadata, against llama.cpp: the real
// Llama SentencePiece vocabulary of ../shared/vocab (ggml-vocab-llama-spm.gguf, which llama.cpp's
// converter made from a tokenizer.model) is written back here as a tokenizer.model (protobuf,
// laid out from sentencepiece_model.proto's field numbers), converted, and must give the same
// tokens, scores and types and encode llama.cpp's test strings to the ids llama.cpp gave. And the
// malformed forms of the file, refused in one line.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/hf_tokenizer.h"
#include "checkpoint/sentencepiece_model.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "hf_export.h"
#include "vocab_vectors.h"

namespace ridge::checkpoint {
namespace sentencepiece_convert_test {

using testing::model_proto;
using testing::put_bytes;
using testing::put_key;
using testing::put_varint;

std::string shared(const std::string& rel) { return std::string(RIDGE_SHARED_DIR) + "/" + rel; }


TEST(SentencePieceConvert, EncodesAsLlamaCpp) {
  const std::string rel = "vocab/ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(shared(rel))) GTEST_SKIP() << "no " << shared(rel) << " (../shared absent)";
  auto original = gguf::File::open(shared(rel));
  ASSERT_TRUE(original.ok()) << original.status().message();
  const auto tokens = original->get_string_array("tokenizer.ggml.tokens");
  const auto scores = original->get_float_array("tokenizer.ggml.scores");
  const auto types = original->get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens.ok() && scores.ok() && types.ok());
  std::vector<int32_t> types32(types->begin(), types->end());
  std::vector<float> scores32(scores->begin(), scores->end());
  HfTokenizerFiles files;
  files.tokenizer_model = model_proto(*tokens, scores32, types32, true);
  files.tokenizer_config_json = R"({"bos_token":"<s>","eos_token":"</s>","unk_token":"<unk>","add_bos_token":true})";
  gguf::Writer w;
  w.set("general.architecture", gguf::make_string("llama"));
  const Status st = convert_tokenizer(files, static_cast<int64_t>(tokens->size()), w);
  ASSERT_TRUE(st.ok()) << st.message();
  auto bytes = w.write_to_memory();
  ASSERT_TRUE(bytes.ok());
  auto converted = gguf::File::parse(*bytes, "converted.gguf");
  ASSERT_TRUE(converted.ok());
  EXPECT_EQ(*converted->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*converted->get_string_array("tokenizer.ggml.tokens"), *tokens);
  EXPECT_EQ(*converted->get_float_array("tokenizer.ggml.scores"), *scores);
  EXPECT_EQ(*converted->get_int_array("tokenizer.ggml.token_type"), *types);
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"}) {
    EXPECT_EQ(*converted->get_int(key), *original->get_int(key)) << key;
  }
  auto tok = tokenizer::Tokenizer::from_gguf(*converted);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_GT(testing::expect_llama_cpp_ids(*tok, shared(rel)), 30);

  // Without the dummy prefix (a model whose normalizer says so): the flag follows it.
  files.tokenizer_model = model_proto(*tokens, scores32, types32, false);
  gguf::Writer w2;
  ASSERT_TRUE(convert_tokenizer(files, static_cast<int64_t>(tokens->size()), w2).ok());
  auto b2 = w2.write_to_memory();
  auto c2 = gguf::File::parse(*b2, "c2.gguf");
  ASSERT_TRUE(c2.ok());
  EXPECT_FALSE(*c2->get_bool("tokenizer.ggml.add_space_prefix"));
  EXPECT_TRUE(*converted->get_bool("tokenizer.ggml.add_space_prefix"));
}

// Padding to the model's rows and tokenizer.json's added tokens past the pieces.
TEST(SentencePieceConvert, PadsAndAddsTokens) {
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a", "b"};
  HfTokenizerFiles files;
  files.tokenizer_model = model_proto(tokens, {0, 0, 0, -1, -2}, {2, 3, 3, 1, 4}, true);
  files.tokenizer_json = R"({"added_tokens":[{"id":5,"content":"<tool>","special":true},{"id":1,"content":"<s>","special":true}]})";
  gguf::Writer w;
  ASSERT_TRUE(convert_tokenizer(files, 8, w).ok());
  auto bytes = w.write_to_memory();
  auto f = gguf::File::parse(*bytes, "f.gguf");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_string_array("tokenizer.ggml.tokens"),
            (std::vector<std::string>{"<unk>", "<s>", "</s>", "\xe2\x96\x81" "a", "b", "<tool>", "[PAD6]", "[PAD7]"}));
  EXPECT_EQ(*f->get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{2, 3, 3, 1, 1, 3, 5, 5}));
  EXPECT_EQ((*f->get_float_array("tokenizer.ggml.scores"))[6], -1000.0);
  EXPECT_EQ(*f->get_int("tokenizer.ggml.bos_token_id"), 1);
  // A GGUF's tokens are the embedding's rows: more pieces, or an added id past them, is refused.
  gguf::Writer w2;
  EXPECT_NE(convert_tokenizer(files, 4, w2).message().find("more than the model's 4 embedding rows"), std::string::npos);
  EXPECT_NE(convert_tokenizer(files, 5, w2).message().find("added token id 5 past"), std::string::npos);
}

TEST(SentencePieceModel, MalformedFilesAreRefusedInOneLine) {
  const std::string good = model_proto({"<unk>", "a"}, {0, -1}, {2, 1}, true);
  ASSERT_TRUE(parse_sentencepiece_model(std::span(reinterpret_cast<const uint8_t*>(good.data()), good.size())).ok());
  auto says = [](const std::string& bytes) {
    auto r = parse_sentencepiece_model(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(says(good.substr(0, good.size() - 3)).find("truncated"), std::string::npos);
  EXPECT_NE(says("").find("no pieces"), std::string::npos);
  EXPECT_NE(says(std::string("\x0f", 1)).find("wire type"), std::string::npos);  // field 1, wire 7
  EXPECT_NE(says(std::string("\x08\x01", 2)).find("wire type"), std::string::npos);  // pieces as a varint
  std::string empty_piece;
  put_bytes(empty_piece, 1, std::string("\x10\x00", 2));  // a piece with only a score field... of the wrong type
  EXPECT_NE(says(empty_piece), "ok");
  std::string bad_type, piece;
  put_bytes(piece, 1, "x");
  put_key(piece, 3, 0);
  put_varint(piece, 9);
  put_bytes(bad_type, 1, piece);
  EXPECT_NE(says(bad_type).find("type 9"), std::string::npos);
  for (const std::string& b : {good.substr(0, 5), bad_type}) EXPECT_EQ(says(b).find('\n'), std::string::npos);
  // A unigram model is another tokenizer: convert refuses it.
  std::string unigram = model_proto({"<unk>", "a"}, {0, -1}, {2, 1}, true);
  const size_t at = unigram.rfind(std::string("\x18\x02", 2));  // trainer_spec's model_type 2 (the last)
  ASSERT_NE(at, std::string::npos);
  unigram[at + 1] = 1;
  gguf::Writer w;
  const Status st = convert_tokenizer({"", "", "", unigram}, 2, w);
  EXPECT_NE(st.message().find("model type 1"), std::string::npos) << st.message();
}

}  // namespace sentencepiece_convert_test
}  // namespace ridge::checkpoint
