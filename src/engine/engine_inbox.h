// The engine's mailbox between client threads and the engine thread (internal).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine.h"
#include "engine/sequence.h"

namespace ridge::engine {

struct Engine::Inbox {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<Sequence>> new_seqs;  // validated, not yet scheduled
  std::vector<RequestId> aborts;
  bool stopping = false;
  bool drain = false;
  bool drain_set = false;
  int64_t n_live = 0;       // accepted and not finished
  RequestId next_id = 1;
  EngineStats snapshot;     // published at the end of each step
};

}  // namespace ridge::engine
