// A part of a split GGUF (llama-gguf-split: "split.count" > 1) is refused in one line that says how
// to merge it, instead of failing on the first tensor that lives in another part.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ridge::model {
namespace split_file_test {

TEST(SplitFile, APartIsRefusedWithTheMergeCommand) {
  const std::string err = testing::load_error("tiny-qwen3", [](gguf::Writer& w) {
    w.set("split.no", gguf::make_u32(0));
    w.set("split.count", gguf::make_u32(3));
  });
  EXPECT_NE(err.find("split in 3 files"), std::string::npos) << err;
  EXPECT_NE(err.find("llama-gguf-split --merge"), std::string::npos) << err;
  EXPECT_EQ(testing::load_error("tiny-qwen3", [](gguf::Writer& w) { w.set("split.count", gguf::make_u32(1)); }), "");
}

}  // namespace split_file_test
}  // namespace ridge::model
