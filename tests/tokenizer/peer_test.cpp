// Agreement with llama.cpp on random Unicode text, special tokens and invalid UTF-8, using ids
// the peer produced (tests/tokenizer/data/peer_*.json, from tools/gen_tokenizer_peer_data.mjs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ridge::tokenizer {
namespace {


class PeerData : public ::testing::TestWithParam<const char*> {};

TEST_P(PeerData, MatchesLlamaCpp) {
  const std::string json_path = std::string(RIDGE_SOURCE_DIR) + "/tests/tokenizer/data/peer_" + GetParam() + ".json";
  const auto data = nlohmann::json::parse(testing::read_file(json_path));
  const std::string model = data.at("model");
  if (!testing::shared_exists(model)) GTEST_SKIP() << "no " << testing::shared_path(model);
  auto tok = testing::load_shared(model);
  ASSERT_TRUE(tok.has_value());

  EXPECT_EQ(tok->bos(), data.at("bos").get<int>());
  EXPECT_EQ(tok->eos(), data.at("eos").get<int>());
  EXPECT_EQ(tok->add_bos(), data.at("add_bos").get<bool>());
  for (const auto& e : data.at("eog")) {
    EXPECT_EQ(tok->is_eog(e.at(0).get<int>()), e.at(1).get<bool>()) << "is_eog(" << e.at(0) << ")";
  }
  int n = 0, failures = 0;
  for (const auto& c : data.at("cases")) {
    const bool special = c.at("special");
    const std::string text = c.contains("bytes_hex") ? testing::from_hex(c.at("bytes_hex")) : c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<TokenId>>();
    const auto got = tok->encode(text, /*add_special=*/false, special);
    ++n;
    if (got != want) {
      ++failures;
      ADD_FAILURE() << GetParam() << (special ? " (special)" : "") << ": text " << nlohmann::json(c).dump()
                    << "\n  want:" << testing::ids_to_string(want) << "\n  got: " << testing::ids_to_string(got);
    }
  }
  EXPECT_GT(n, 80);
  EXPECT_EQ(failures, 0) << failures << " of " << n << " cases differ";
}

INSTANTIATE_TEST_SUITE_P(All, PeerData,
                         ::testing::Values("qwen2", "llama_bpe", "gpt2", "llama_spm", "stories260k"));

}  // namespace
}  // namespace ridge::tokenizer
