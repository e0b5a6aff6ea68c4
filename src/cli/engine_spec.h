// The speculative-decoding flags of the engine's commands (`ridge serve`, `ridge batch`):
// --spec ngram|draft, --draft, --spec-max, --spec-ngram, and the roof the engine plans draft lengths against.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/engine.h"
#include "model/model.h"

namespace ridge::cli {

struct EngineSpecArgs {
  std::string method;      // "" (off), "ngram" or "draft"
  std::string draft_path;  // --draft FILE.gguf (implies --spec draft)
  std::string rule = "auto";  // --spec-rule
  std::unique_ptr<model::Model> draft_model;  // loaded by resolve_engine_spec; the engine's
};

void add_engine_spec_flags(CLI::App& app, EngineSpecArgs& a, engine::EngineOptions& o);

// Sets o.spec from the flags (usage error for an unknown method; a draft model is loaded into
// a.draft_model and checked against m), and o's roof from the cached `ridge probe` when there
// is one.
Status resolve_engine_spec(EngineSpecArgs& a, const model::Model& m, engine::EngineOptions& o);

// "speculation: prompt lookup, 1234 drafted, 567 accepted (46%)"; empty when it was off.
std::string format_spec_stats(const engine::EngineOptions& o, const engine::EngineStats& st);

}  // namespace ridge::cli
