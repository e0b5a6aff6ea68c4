// `ridge serve` flags checked before any model loads: where the API key comes from, the warning
// for a network address without one, and limits that make no sense.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "run_binary.h"
#include "test_files.h"

namespace {

using ridge::testing::temp_file;

using ridge::testing::run_ridge;


TEST(ServeFlags, ApiKeySources) {
  const std::string key = temp_file("ridge_key_", "s3cret\n");
  const std::string empty = temp_file("ridge_empty_key_", "\n");
  auto both = run_ridge("serve -m none.gguf --api-key a --api-key-file " + key);
  EXPECT_EQ(both.rc, 2) << both.text;
  EXPECT_NE(both.text.find("not both"), std::string::npos) << both.text;
  auto missing = run_ridge("serve -m none.gguf --api-key-file /nonexistent/key");
  EXPECT_EQ(missing.rc, 2) << missing.text;
  EXPECT_NE(missing.text.find("cannot read"), std::string::npos) << missing.text;
  auto blank = run_ridge("serve -m none.gguf --api-key-file " + empty);
  EXPECT_EQ(blank.rc, 2) << blank.text;
  // A readable key file gets as far as loading the (missing) model: a runtime error.
  auto ok = run_ridge("serve -m /nonexistent/model.gguf --port 0 --api-key-file " + key);
  EXPECT_EQ(ok.rc, 1) << ok.text;
  std::filesystem::remove(key);
  std::filesystem::remove(empty);
}

TEST(ServeFlags, NetworkAddressWithoutKeyWarns) {
  ::unsetenv("RIDGE_API_KEY");
  auto open = run_ridge("serve -m /nonexistent/model.gguf --host 0.0.0.0 --port 0");
  EXPECT_EQ(open.rc, 1) << open.text;
  EXPECT_NE(open.text.find("without an API key"), std::string::npos) << open.text;
  ::setenv("RIDGE_API_KEY", "k", 1);
  auto keyed = run_ridge("serve -m /nonexistent/model.gguf --host 0.0.0.0 --port 0");
  ::unsetenv("RIDGE_API_KEY");
  EXPECT_EQ(keyed.rc, 1) << keyed.text;
  EXPECT_EQ(keyed.text.find("without an API key"), std::string::npos) << keyed.text;
  auto loopback = run_ridge("serve -m /nonexistent/model.gguf --port 0");
  EXPECT_EQ(loopback.text.find("without an API key"), std::string::npos) << loopback.text;
}

TEST(ServeFlags, LimitsThatMakeNoSenseAreUsageErrors) {
  for (const char* flags : {"--http-threads 0", "--max-connections 0", "--max-body 0",
                            "--header-timeout 0", "--header-timeout 5 --read-timeout 1"}) {
    auto r = run_ridge(std::string("serve -m none.gguf ") + flags);
    EXPECT_EQ(r.rc, 2) << flags << ": " << r.text;
    EXPECT_EQ(r.text.rfind("ridge: error: serve: --", 0), 0u) << flags << ": " << r.text;
  }
}

}  // namespace
