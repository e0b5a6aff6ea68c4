// `--device` on the model commands: an unknown device and --isa with a device backend are usage
// errors; `--device cuda` runs where a GPU is, and is otherwise one line naming why not (no GPU
// here, or a ridge built without nvcc), before any model is read.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "run_binary.h"

namespace ridge::testing::device_flag {
namespace {

// One line of error, or a clean run: what `--device cuda` may print here.
void expect_cuda_answer(const CmdOutput& r, const std::string& what) {
  if (r.rc == 0) return;  // a machine with a GPU
  const bool no_gpu = r.rc == 1 && r.text.find("no CUDA device") != std::string::npos;
  const bool not_built = r.rc == 2 && r.text.find("built without the CUDA backend") != std::string::npos;
  EXPECT_TRUE(no_gpu || not_built) << what << ": rc " << r.rc << ": " << r.text;
  EXPECT_EQ(r.text.find('\n'), r.text.size() - 1) << what << ": one line: " << r.text;
  EXPECT_EQ(r.text.rfind("ridge: error: ", 0), 0u) << r.text;
}

std::string tiny_model() {
  const std::string path = (std::filesystem::temp_directory_path() / "ridge_device_flag_tiny.gguf").string();
  const CmdOutput w = run_ridge("synth --preset tiny-qwen3 --type q8_0 -o " + path);
  EXPECT_EQ(w.rc, 0) << w.text;
  return path;
}

TEST(DeviceFlag, UnknownDeviceIsAUsageError) {
  for (const char* cmd : {"run -m none.gguf -p hi", "chat -m none.gguf", "serve -m none.gguf --port 0", "probe",
                          "bench -m none.gguf"}) {
    const CmdOutput r = run_ridge(std::string(cmd) + " --device gpu");
    EXPECT_EQ(r.rc, 2) << cmd << ": " << r.text;
    EXPECT_NE(r.text.find("--device must be cpu or cuda, got 'gpu'"), std::string::npos) << cmd << ": " << r.text;
  }
}

TEST(DeviceFlag, CudaIsAnsweredInOneLine) {
  const std::string model = tiny_model();
  const CmdOutput run = run_ridge("run -m " + model + " -p hi -n 2 --temp 0 --device cuda");
  expect_cuda_answer(run, "run");
  expect_cuda_answer(run_ridge("probe --device cuda --size-mib 64 --reps 1"), "probe");
  expect_cuda_answer(run_ridge("bench -m " + model + " --batch 1 --ctx 8 -n 2 --device cuda --json"), "bench");
  // Where there is a GPU the server would start and stay: asked only where there is none.
  if (run.rc != 0) expect_cuda_answer(run_ridge("serve -m " + model + " --port 0 --device cuda"), "serve");
  std::filesystem::remove(model);
}

TEST(DeviceFlag, PairedProbeReadsHostMemoryOnly) {
  const CmdOutput r = run_ridge("bench -m none.gguf --device cuda --paired-probe");
  EXPECT_EQ(r.rc, 2) << r.text;
  EXPECT_NE(r.text.find("--paired-probe"), std::string::npos) << r.text;
}

TEST(DeviceFlag, IsaPicksCpuKernelsOnly) {
  const CmdOutput r = run_ridge("run -m none.gguf -p hi --device cuda --isa avx2");
  EXPECT_EQ(r.rc, 2) << r.text;
  const bool refused = r.text.find("picks CPU kernels") != std::string::npos ||
                       r.text.find("built without the CUDA backend") != std::string::npos;
  EXPECT_TRUE(refused) << r.text;
}

}  // namespace
}  // namespace ridge::testing::device_flag
