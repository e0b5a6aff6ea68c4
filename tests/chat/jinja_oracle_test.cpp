// Renders every case of tests/chat/jinja2_oracle.py (Python jinja2 with Hugging Face
// conventions over the real templates in ../shared/templates) and compares byte for byte.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "chat/jinja/template.h"

namespace ridge::chat::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

// The first interpreter that can import jinja2, or "".
std::string find_python() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    std::string cmd = std::string(py) + " -c 'import jinja2' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

bool run_command(const std::string& cmd, std::string* out) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return false;
  std::array<char, 65536> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out->append(buf.data(), n);
  return pclose(pipe.release()) == 0;
}

std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out.push_back(c);
  }
  return out;
}

std::string describe_mismatch(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  std::ostringstream os;
  os << "first difference at byte " << i << " (expected " << want.size() << " bytes, got "
     << got.size() << ")\n  expected: ..." << escaped(want.substr(from, 140)) << "\n  ridge:    ..."
     << escaped(got.substr(from, 140));
  return os.str();
}

TEST(JinjaOracle, AllTemplatesMatchPythonJinja2) {
  const std::filesystem::path tdir = std::filesystem::path(RIDGE_SHARED_DIR) / "templates";
  const std::filesystem::path script =
      std::filesystem::path(RIDGE_SOURCE_DIR) / "tests" / "chat" / "jinja2_oracle.py";
  if (!std::filesystem::is_directory(tdir)) {
    GTEST_SKIP() << "templates directory " << tdir << " is absent";
  }
  std::string py = find_python();
  if (py.empty()) {
    GTEST_SKIP() << "no Python interpreter with jinja2 (tried /usr/bin/python3 and python3)";
  }
  std::string out;
  ASSERT_TRUE(
      run_command(py + " " + shell_quote(script.string()) + " " + shell_quote(tdir.string()), &out))
      << "oracle script failed";
  json cases = json::parse(out, nullptr, false);
  ASSERT_TRUE(cases.is_array()) << "oracle output is not a JSON list";
  ASSERT_GT(cases.size(), 0u);

  std::map<std::string, Result<Template>> templates;
  std::map<std::string, int> total, passed;
  int reported = 0;
  for (size_t idx = 0; idx < cases.size(); ++idx) {
    const json& c = cases[idx];
    // A real template file, or an inline snippet (counted together as "snippets").
    const bool inline_src = c.contains("source");
    const std::string key =
        inline_src ? c["source"].get<std::string>() : c.at("template").get<std::string>();
    const std::string name = inline_src ? "snippets" : key;
    auto it = templates.find(key);
    if (it == templates.end()) {
      std::string src = key;
      if (!inline_src) {
        std::ifstream f(tdir / key, std::ios::binary);
        src.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      }
      it = templates.emplace(key, Template::parse(src)).first;
      EXPECT_TRUE(it->second.ok()) << name << ": " << it->second.status().message();
    }
    ++total[name];
    if (!it->second.ok()) continue;
    RenderOptions opts;
    opts.now_unix = c.at("now_unix").get<int64_t>();
    auto r = it->second->render(c.at("trusted"), c.at("untrusted"), opts);
    std::string failure;
    if (c.contains("error") && std::getenv("RIDGE_JINJA_ORACLE_VERBOSE") != nullptr) {
      std::printf("%s #%zu %s\n  jinja2: %s\n  ridge:  %s\n", name.c_str(), idx,
                  c.value("name", "").c_str(), c["error"].get<std::string>().c_str(),
                  r.ok() ? "(rendered)" : r.status().message().c_str());
    }
    if (c.contains("error")) {
      if (r.ok()) {
        failure = "jinja2 failed (" + c["error"].get<std::string>() + ") but ridge rendered";
      } else if (c.value("raised", false) &&
                 r.status().message() != c["error"].get<std::string>()) {
        failure = "raise_exception message differs: expected \"" + c["error"].get<std::string>() +
                  "\", got \"" + r.status().message() + "\"";
      }
    } else if (!r.ok()) {
      failure = "ridge failed: " + r.status().message();
    } else if (r->text != c["expected"].get<std::string>()) {
      failure = describe_mismatch(c["expected"].get<std::string>(), r->text);
    }
    if (failure.empty()) {
      ++passed[name];
    } else if (reported++ < 15) {
      ADD_FAILURE() << name << " case " << idx << " (" << c.value("name", "") << ", "
                    << "add_generation_prompt="
                    << c["trusted"].value("add_generation_prompt", false) << "): " << failure;
    }
  }
  int all = 0, ok = 0, identical_templates = 0, n_templates = 0;
  for (const auto& [name, n] : total) {
    if (name == "snippets") continue;
    ++n_templates;
    all += n;
    ok += passed[name];
    if (passed[name] == n) ++identical_templates;
  }
  std::printf(
      "jinja oracle: %d templates x %d cases: %d/%d identical (%d templates fully); "
      "snippets: %d/%d identical\n",
      n_templates, n_templates > 0 ? all / n_templates : 0, ok, all, identical_templates,
      passed["snippets"], total["snippets"]);
  EXPECT_EQ(n_templates, 18);
  EXPECT_EQ(ok, all);
  EXPECT_EQ(identical_templates, n_templates);
  EXPECT_EQ(passed["snippets"], total["snippets"]);
}

}  // namespace
}  // namespace ridge::chat::jinja
