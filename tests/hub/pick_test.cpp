// Which files `ridge pull` takes from a repository listing, and the checks on its input.
#include <gtest/gtest.h>

#include "hub/pick.h"
#include "hub/sha256.h"

namespace ridge::hub {
namespace pick_test {

std::vector<RepoFile> listing(std::initializer_list<const char*> paths) {
  std::vector<RepoFile> out;
  for (const char* p : paths) out.push_back({p, 1, ""});
  return out;
}

std::vector<std::string> paths(const Result<std::vector<RepoFile>>& r) {
  std::vector<std::string> out;
  if (r.ok()) {
    for (const auto& f : *r) out.push_back(f.path);
  }
  return out;
}

TEST(PullPick, QuantTagBetweenSeparators) {
  EXPECT_TRUE(has_quant_tag("Qwen3-8B-Q4_K_M.gguf", "q4_k_m"));
  EXPECT_TRUE(has_quant_tag("model.Q4_K_M-00001-of-00002.gguf", "Q4_K_M"));
  EXPECT_TRUE(has_quant_tag("Q4_K_M/model-00001-of-00002.gguf", "Q4_K_M"));
  EXPECT_FALSE(has_quant_tag("Qwen3-8B-Q4_K_M.gguf", "Q4_K"));
  EXPECT_FALSE(has_quant_tag("Qwen3-8B-IQ4_XS.gguf", "Q4_XS"));
  EXPECT_FALSE(has_quant_tag("Qwen3-8B-UD-Q4_K_XL.gguf", "Q4_K"));
  EXPECT_FALSE(has_quant_tag("anything.gguf", ""));
}

TEST(PullPick, DefaultIsQ4KMThenTheOnlyModel) {
  const auto files = listing({"README.md", "m-Q8_0.gguf", "m-Q4_K_M.gguf", "mmproj-m-Q4_K_M.gguf"});
  EXPECT_EQ(paths(pick_gguf(files, "")), std::vector<std::string>{"m-Q4_K_M.gguf"});
  EXPECT_EQ(paths(pick_gguf(files, "q8_0")), std::vector<std::string>{"m-Q8_0.gguf"});
  EXPECT_EQ(paths(pick_gguf(listing({"model-f16.gguf", "mmproj-f16.gguf"}), "")), std::vector<std::string>{"model-f16.gguf"});
}

TEST(PullPick, MissingQuantListsWhatThereIs) {
  const auto r = pick_gguf(listing({"m-Q8_0.gguf", "m-IQ2_XXS.gguf", "m-BF16.gguf"}), "Q5_K_M");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BF16, IQ2_XXS, Q8_0"), std::string::npos) << r.status().message();
  const auto none = pick_gguf(listing({"m-Q8_0.gguf", "m-Q6_K.gguf"}), "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("Q4_K_M (the default)"), std::string::npos) << none.status().message();
  EXPECT_FALSE(pick_gguf(listing({"README.md", "config.json"}), "").ok());
}

TEST(PullPick, SplitFilesInOrderAndComplete) {
  const auto files = listing({"Q8_0/m-Q8_0-00003-of-00003.gguf", "Q8_0/m-Q8_0-00001-of-00003.gguf",
                              "Q8_0/m-Q8_0-00002-of-00003.gguf", "m-Q4_K_M.gguf"});
  EXPECT_EQ(paths(pick_gguf(files, "Q8_0")),
            (std::vector<std::string>{"Q8_0/m-Q8_0-00001-of-00003.gguf", "Q8_0/m-Q8_0-00002-of-00003.gguf",
                                      "Q8_0/m-Q8_0-00003-of-00003.gguf"}));
  const auto gap = pick_gguf(listing({"m-Q8_0-00001-of-00003.gguf", "m-Q8_0-00003-of-00003.gguf"}), "Q8_0");
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("part 2 of 3"), std::string::npos) << gap.status().message();
}

TEST(PullPick, RepoReferences) {
  auto r = parse_repo_ref("unsloth/Qwen3-8B-GGUF:Q4_K_M");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo, "unsloth/Qwen3-8B-GGUF");
  EXPECT_EQ(r->quant, "Q4_K_M");
  r = parse_repo_ref("Qwen/Qwen3-0.6B-GGUF");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->quant, "");
  for (const char* bad : {"", "noslash", "a/b/c", "../x", "a/..", "/a", "a/b:", "a/b:Q4 K", "a/b:Q4/../x"}) {
    const auto e = parse_repo_ref(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_TRUE(e.status().is_usage()) << bad;
    }
  }
}

TEST(PullSha256, KnownDigests) {
  Sha256 empty;
  EXPECT_EQ(empty.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.update("ab", 2);
  abc.update("c", 1);
  EXPECT_EQ(abc.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace pick_test
}  // namespace ridge::hub
