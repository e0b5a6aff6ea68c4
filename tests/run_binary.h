// Runs the built `ridge` binary (RIDGE_BINARY) with arguments through the shell and returns its
// exit code and its stdout and stderr together, for CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace ridge::testing {

struct CmdOutput {
  int rc = -1;       // exit code; -1 if it did not exit normally
  std::string text;  // stdout and stderr together
};

// A shell command line's exit code and what it prints on stdout (redirect stderr in `cmd` to
// see it too).
inline CmdOutput run_shell(const std::string& cmd) {
  CmdOutput o;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.text.append(buf, n);
  const int status = pclose(p);
  o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

// stdin_text (a printf format: no single quotes) is piped in; with none, stdin is /dev/null.
inline CmdOutput run_ridge(const std::string& args, const std::string& stdin_text = "") {
  std::string cmd = std::string(RIDGE_BINARY) + " " + args + " 2>&1";
  cmd = stdin_text.empty() ? cmd + " </dev/null" : "printf '" + stdin_text + "' | " + cmd;
  return run_shell(cmd);
}

}  // namespace ridge::testing
