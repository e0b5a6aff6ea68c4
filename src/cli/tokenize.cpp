// ridge tokenize: how a model's tokenizer splits a text (ids and pieces), as llama.cpp would.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "gguf/reader.h"
#include "gguf/utf8.h"
#include "tokenizer/tokenizer.h"

namespace ridge::cli {
namespace {

// A piece as a readable literal: control characters and bytes of broken UTF-8 escaped (and
// quotes, for the quoted table form).
std::string escape_piece(std::string_view p, bool quoted) {
  std::string out;
  for (size_t i = 0; i < p.size();) {
    const auto c = static_cast<uint8_t>(p[i]);
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (c >= 0x80 && (i + len > p.size() || !is_valid_utf8(p.substr(i, len)))) len = 0;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (quoted && (c == '\\' || c == '\'')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || len == 0) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.append(p.substr(i, len));
      i += len;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  CLI::App app{"Tokenize text with a GGUF model's tokenizer (ids and pieces, as llama.cpp would)", "tokenize"};
  std::string model_path, text, text_file, format = "table";
  bool special = false, no_bos = false;
  app.add_option("-m,--model", model_path, "GGUF file (a vocabulary-only file is enough)")->required();
  app.add_option("text", text, "text to tokenize");
  app.add_option("-f,--file", text_file, "read the text from this file instead");
  app.add_flag("--special", special, "recognise special-token text such as <|im_start|>");
  app.add_flag("--no-bos", no_bos, "do not add BOS/EOS even where the vocabulary asks for it");
  app.add_option("--format", format, "table (id and piece per line), ids (JSON array) or json")
      ->check(CLI::IsMember({"table", "ids", "json"}));
  if (auto rc = parse(app, argc, argv)) return *rc;
  if (!text_file.empty()) {
    if (app.count("text") > 0) return report(usage_error("tokenize: give the text or --file, not both"));
    auto t = read_text_file(text_file, "tokenize", "--file");
    if (!t.ok()) return report(t.status());
    text = std::move(t).value();
  }
  auto file = gguf::File::open(model_path);
  if (!file.ok()) return report(file.status());
  auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!tok.ok()) return report(tok.status());

  const auto ids = tok->encode(text, /*add_special=*/!no_bos, special);
  if (format == "ids") {
    fmt::print("{}\n", nlohmann::json(ids).dump());
    return 0;
  }
  if (format == "json") {
    nlohmann::json pieces = nlohmann::json::array();
    for (auto id : ids) pieces.push_back(escape_piece(tok->token_to_piece(id), false));
    fmt::print("{}\n", nlohmann::json{{"ids", ids}, {"pieces", pieces}, {"n_tokens", ids.size()}}.dump());
    return 0;
  }
  for (auto id : ids) {
    fmt::print("{:>8}  '{}'{}\n", id, escape_piece(tok->token_to_piece(id), true), tok->is_control(id) ? "  (control)" : "");
  }
  fmt::print("{} tokens, {} bytes; tokenizer {} (pre {}), vocabulary {}\n", ids.size(), text.size(),
             tok->model_name(), tok->pre_name(), tok->n_vocab());
  return 0;
}

}  // namespace ridge::cli
