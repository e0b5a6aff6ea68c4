// mtp_oracle: reference outputs of llama.cpp's Qwen3.5 MTP ("nextn") draft head.
//
// Independent oracle for ridge's MTP implementation. It drives llama.cpp's public
// and staging (llama-ext.h) API the same way common/speculative.cpp's draft-mtp
// driver does, and prints JSON lines (stdout only; llama.cpp logs go to stderr):
//
//   {"kind":"meta",...}                         model/run facts, incl. x_next
//   {"kind":"target","pos":p,"top":[[id,prob],...]}  softmax(target logits row p)
//   {"kind":"mtp","pos":p,"top":[...]}          teacher-forced MTP, row p:
//        MTP(token x_p, position p, h_{p-1}), h_{-1} = 0, where h_q is the target's
//        nextn embedding of row q (= output_norm(final trunk hidden), as llama.cpp
//        exposes it). Predicts x_{p+2}.
//   {"kind":"draft","step":i,"pos":n+i-1,"token":d_i,"top":[...]}  chained drafts:
//        x_n = argmax target row n-1; step 1 = MTP(x_n, n, h_{n-1}) -> L_1, g_1;
//        step i>1 = MTP(d_{i-1}, n+i-1, g_{i-1}); d_i = argmax L_i. g_i is the MTP
//        context's own nextn row (after the shared head norm).
// The MTP context's KV holds the teacher-forced rows 0..n-1 when drafting, as in
// llama.cpp's speculative loop (process() of the prompt batch, then draft()).
// Probabilities: full-vocab softmax at temperature 1, computed in double.
//
// usage: mtp_oracle --model M.gguf --tokens 1,5,9 [--top 8] [--draft 4] [--threads 2]

#include "llama.h"
#include "llama-ext.h"  // llama_set_embeddings_nextn, llama_get_embeddings_nextn_ith

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

[[noreturn]] static void die(const std::string & msg) {
    fprintf(stderr, "mtp_oracle: error: %s\n", msg.c_str());
    fflush(stdout);
    exit(1);
}

// Owns the arrays of a single-sequence llama_batch carrying BOTH token ids and
// h rows (the MTP graph reads the token embedding and the h input per row).
struct Batch {
    std::vector<llama_token> tok; std::vector<float> embd; std::vector<llama_pos> pos;
    std::vector<int32_t> nseq; std::vector<llama_seq_id> seq0; std::vector<llama_seq_id *> seq;
    std::vector<int8_t> out;
    llama_batch view(bool with_embd) {
        size_t n = tok.size();
        nseq.assign(n, 1); seq0.assign(n, 0); seq.resize(n);
        for (size_t i = 0; i < n; ++i) seq[i] = &seq0[i];
        return llama_batch{ (int32_t) n, tok.data(), with_embd ? embd.data() : nullptr,
                            pos.data(), nseq.data(), seq.data(), out.data() };
    }
};

// top-k of softmax(logits), ties broken by lower id; element 0 is the argmax.
static std::vector<std::pair<int, double>> top_probs(const float * logits, int n_vocab, int k) {
    double mx = -INFINITY;
    for (int i = 0; i < n_vocab; ++i) mx = std::max(mx, (double) logits[i]);
    double z = 0.0;
    for (int i = 0; i < n_vocab; ++i) z += std::exp((double) logits[i] - mx);
    std::vector<int> idx(n_vocab);
    for (int i = 0; i < n_vocab; ++i) idx[i] = i;
    k = std::min(k, n_vocab);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b; });
    std::vector<std::pair<int, double>> r;
    for (int i = 0; i < k; ++i) r.push_back({ idx[i], std::exp((double) logits[idx[i]] - mx) / z });
    return r;
}

static std::string top_json(const std::vector<std::pair<int, double>> & t) {
    std::string s = "[";
    char buf[64];
    for (size_t i = 0; i < t.size(); ++i) {
        snprintf(buf, sizeof buf, "%s[%d,%.9g]", i ? "," : "", t[i].first, t[i].second);
        s += buf;
    }
    return s + "]";
}

static void log_cb(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    std::string model_path;
    std::vector<llama_token> x;
    int n_top = 8, n_draft = 4, n_threads = 2;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) die("missing value for " + a);
        std::string v = argv[++i];
        if (a == "--model") model_path = v;
        else if (a == "--top") n_top = std::atoi(v.c_str());
        else if (a == "--draft") n_draft = std::atoi(v.c_str());
        else if (a == "--threads") n_threads = std::atoi(v.c_str());
        else if (a == "--tokens") {
            for (size_t p = 0; p < v.size();) {
                size_t q = v.find(',', p); if (q == std::string::npos) q = v.size();
                x.push_back((llama_token) std::atoi(v.substr(p, q - p).c_str())); p = q + 1;
            }
        } else die("unknown argument " + a);
    }
    if (model_path.empty() || x.empty()) die("usage: mtp_oracle --model M.gguf --tokens 1,2,3 [--top 8] [--draft 4] [--threads 2]");
    if (n_top < 1 || n_draft < 0 || n_threads < 1) die("--top and --threads must be >= 1, --draft >= 0");
    const int n = (int) x.size();

    llama_log_set(log_cb, nullptr);
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mtp = true;  // MTP tensors are skipped (TENSOR_SKIP) unless asked for
    llama_model * model = llama_model_load_from_file(model_path.c_str(), mp);
    if (!model) die("failed to load model " + model_path);
    if (llama_model_n_layer_nextn(model) < 1) die("model has no MTP (nextn) layers");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const int n_embd = llama_model_n_embd_out(model);  // width of an h row
    for (llama_token t : x) if (t < 0 || t >= n_vocab) die("token id out of range: " + std::to_string(t));

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = std::max(256, n + n_draft + 8);
    cp.n_batch = cp.n_ubatch = std::max(n, 32);  // whole prompt = one (u)batch
    cp.n_seq_max = 1;
    cp.n_outputs_max = 0;  // = n_batch: every row may output
    cp.n_threads = cp.n_threads_batch = n_threads;
    llama_context * tgt = llama_init_from_model(model, cp);
    if (!tgt) die("failed to create target context");
    cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;  // graph = DECODER_MTP, KV = nextn layer only
    cp.ctx_other = tgt;                    // as common_speculative_init does
    cp.n_rs_seq = 0;
    llama_context * mtp = llama_init_from_model(model, cp);
    if (!mtp) die("failed to create MTP context (model without MTP layers?)");
    // target: h row for every token (unmasked); MTP: h row only for output rows (masked)
    llama_set_embeddings_nextn(tgt, true, /*masked=*/ false);
    llama_set_embeddings_nextn(mtp, true, /*masked=*/ true);

    // 1) target over the whole prompt, logits for every row; keep every h row.
    Batch b;
    b.tok = x; b.out.assign(n, 1);
    for (int p = 0; p < n; ++p) b.pos.push_back(p);
    if (llama_decode(tgt, b.view(false)) != 0) die("target llama_decode failed");
    std::vector<float> h((size_t) n * n_embd);
    std::vector<std::string> tgt_lines;
    llama_token x_next = 0;
    for (int p = 0; p < n; ++p) {
        const float * hr = llama_get_embeddings_nextn_ith(tgt, p);
        const float * lg = llama_get_logits_ith(tgt, p);
        if (!hr || !lg) die("target outputs missing at row " + std::to_string(p));
        std::memcpy(&h[(size_t) p * n_embd], hr, sizeof(float) * n_embd);
        auto t = top_probs(lg, n_vocab, n_top);
        if (p == n - 1) x_next = top_probs(lg, n_vocab, 1)[0].first;
        tgt_lines.push_back("{\"kind\":\"target\",\"pos\":" + std::to_string(p) + ",\"top\":" + top_json(t) + "}");
    }
    printf("{\"kind\":\"meta\",\"n_tokens\":%d,\"n_vocab\":%d,\"n_embd\":%d,\"n_layer_nextn\":%d,\"x_next\":%d}\n",
           n, n_vocab, n_embd, llama_model_n_layer_nextn(model), x_next);
    for (auto & s : tgt_lines) puts(s.c_str());

    // 2) teacher-forced MTP = llama.cpp's process(): same tokens/positions, h shifted
    //    right by one (row 0 gets zeros). We request logits on every row (process()
    //    requests none); that does not change what goes into the MTP KV.
    b.embd.assign((size_t) n * n_embd, 0.0f);
    std::memcpy(b.embd.data() + n_embd, h.data(), sizeof(float) * (size_t) (n - 1) * n_embd);
    if (llama_decode(mtp, b.view(true)) != 0) die("MTP llama_decode (teacher-forced) failed");
    for (int p = 0; p < n; ++p) {
        const float * lg = llama_get_logits_ith(mtp, p);
        if (!lg) die("MTP logits missing at row " + std::to_string(p));
        printf("{\"kind\":\"mtp\",\"pos\":%d,\"top\":%s}\n", p, top_json(top_probs(lg, n_vocab, n_top)).c_str());
    }

    // 3) chained drafts = llama.cpp's draft(): one row per step, KV grows by one.
    std::vector<float> hin(h.end() - n_embd, h.end());  // pending_h = h_{n-1}
    llama_token tok = x_next;
    for (int i = 1; i <= n_draft; ++i) {
        const int pos = n + i - 1;
        b.tok = { tok }; b.pos = { pos }; b.out = { 1 }; b.embd = hin;
        if (llama_decode(mtp, b.view(true)) != 0) die("MTP llama_decode (draft step " + std::to_string(i) + ") failed");
        const float * lg = llama_get_logits_ith(mtp, 0);
        const float * g  = llama_get_embeddings_nextn_ith(mtp, 0);
        if (!lg || !g) die("MTP outputs missing at draft step " + std::to_string(i));
        auto t = top_probs(lg, n_vocab, n_top);
        tok = t[0].first;
        hin.assign(g, g + n_embd);  // g_i feeds step i+1
        printf("{\"kind\":\"draft\",\"step\":%d,\"pos\":%d,\"token\":%d,\"top\":%s}\n", i, pos, tok, top_json(t).c_str());
    }

    llama_free(mtp);
    llama_free(tgt);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
