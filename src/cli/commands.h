// Subcommand entry points: each takes the arguments after the subcommand name (argv[0] is the
// subcommand) and returns the process exit code.
#pragma once

namespace ridge::cli {

int cmd_inspect(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_batch(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_roofline(int argc, char** argv);
int cmd_probe(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_perplexity(int argc, char** argv);
int cmd_quality(int argc, char** argv);
int cmd_imatrix(int argc, char** argv);
int cmd_pull(int argc, char** argv);
int cmd_convert(int argc, char** argv);

}  // namespace ridge::cli
