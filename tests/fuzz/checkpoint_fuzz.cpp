// libFuzzer target: the checkpoint folder's tokenizer files, which come from wherever a user got
// the folder, must convert or give a Status, never crash, hang or allocate without bound. The
// first byte picks tokenizer.model (even: a SentencePiece protobuf) or tokenizer.json (odd); the
// rest is that file, converted for a model of 64 rows.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/hf_tokenizer.h"
#include "gguf/writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  ridge::checkpoint::HfTokenizerFiles files;
  if (data[0] % 2 == 0) {
    files.tokenizer_model = file;
  } else {
    files.tokenizer_json = file;
  }
  files.tokenizer_config_json = R"({"bos_token":"<s>","add_bos_token":true})";
  ridge::gguf::Writer w;
  (void)ridge::checkpoint::convert_tokenizer(files, 64, w);
  return 0;
}
