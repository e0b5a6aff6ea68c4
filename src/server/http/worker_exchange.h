// Internal to the HTTP layer: the Exchange a worker thread answers through.
#pragma once

#include "server/http/connection.h"

namespace ridge::server::http {

class WorkerExchange final : public Exchange {
 public:
  // `route` labels the request in the metrics (the server's observer).
  WorkerExchange(Connection& conn, const Server::Impl& srv, std::string_view route);

  void respond(Response res) override;
  bool begin_stream(int status, std::string_view content_type, const Headers& headers) override;
  bool write_chunk(std::string_view data) override;
  void end_stream() override;
  bool client_gone() const override;
  void set_outcome(int status) override { outcome_ = status; }

  // After the handler: answers 500 if it did not answer; an unfinished stream closes; the
  // request is counted if it was not yet.
  void finish();
  bool keep_alive() const;   // whether the connection may take another request

 private:
  enum class State { kNone, kStreaming, kDone };
  bool write_all(std::string_view data);
  int outcome() const;  // what the metrics record
  void observe_once(int status);

  Connection& conn_;
  const Server::Impl& srv_;
  std::string_view route_;
  bool keep_alive_;
  bool observed_ = false;
  State state_ = State::kNone;
  bool ok_ = true;  // every write so far reached the socket in time
  int status_ = 0;
  int outcome_ = 0;
};

}  // namespace ridge::server::http
