// `hearsay sim`: one simulator run (sim/sim_run.h), printed as a summary or one JSON object.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "hearsay/cli/commands.h"
#include "hearsay/cli/experiment_command.h"
#include "hearsay/net/records_file.h"
#include "hearsay/sim/sim_config.h"
#include "hearsay/sim/sim_run.h"

namespace hearsay::cli {

namespace {

// A one-line progress bar on stderr, redrawn in place.
void DrawProgress(uint64_t done, uint64_t total) {
  const int width = 40;
  const double f = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(f * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r[%s] %3d%% %llu/%llu", bar.c_str(), static_cast<int>(f * 100),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  if (done >= total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

void AddSimCommand(CLI::App& app, int& exit_code) {
  auto config = std::make_shared<sim::SimConfig>();
  auto json = std::make_shared<bool>(false);
  auto records = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("sim", "Simulate a cluster in virtual time and print its figures");
  sim::SimConfig& c = *config;
  cmd->add_option("--workload", c.workload, "mmlu, trace or chat")->capture_default_str();
  cmd->add_option("--trace", c.trace_path, "Mooncake-format JSONL trace (--workload trace)");
  cmd->add_option("--nodes", c.nodes, "Cluster size")->capture_default_str();
  cmd->add_option("--policy", c.policy, "Routing policy")->capture_default_str();
  cmd->add_option("--delay-ms", c.delay_ms, "One-way network delay, ms")->capture_default_str();
  cmd->add_option("--delay-jitter", c.delay_jitter,
                  "Relative jitter of the delay: each message takes [d, d x (1 + jitter)]")
      ->capture_default_str();
  cmd->add_option("--zipf", c.zipf, "Zipf exponent of prefix popularity")->capture_default_str();
  cmd->add_option("--rho", c.rho, "Target utilization of cluster capacity")->capture_default_str();
  cmd->add_option("--rate", c.rate_per_s,
                  "Arrival rate over the cluster, requests/s (replaces --rho when > 0)");
  cmd->add_option("--max-running", c.max_running,
                  "Most requests each engine runs at once (llama-server -np; 0: default 256)");
  cmd->add_option("--host-cores", c.host_cores,
                  "Cores of the one host all engines share (CPU engines); 0: a machine each")
      ->capture_default_str();
  cmd->add_option("--host-contention", c.host_contention,
                  "How much prefills on that host slow each other beyond sharing its cores: each "
                  "of p at once runs at 1 / (1 + C (min(p, cores) - 1)); 0.3 is about the llama "
                  "demo's host")
      ->capture_default_str();
  cmd->add_option("--engine-cache", c.engine_cache,
                  "How each engine keeps its KV cache: paged (vLLM, SGLang) or slots (llama.cpp: "
                  "--max-running slots and a host cache of --capacity-tokens whole sequences)")
      ->capture_default_str();
  cmd->add_option("--requests", c.requests, "Requests to simulate")->capture_default_str();
  cmd->add_option("--capacity-tokens", c.capacity_tokens, "KV cache per engine, tokens")
      ->capture_default_str();
  cmd->add_option("--gossip-ms", c.gossip_ms, "Gossip interval, ms")->capture_default_str();
  cmd->add_option("--seed", c.seed, "Random seed")->capture_default_str();
  cmd->add_option("--cluster-seed", c.cluster_seed,
                  "Seed of the cluster alone (network, nodes' randomness); 0: --seed. The same "
                  "--seed with another --cluster-seed sends the same requests")
      ->capture_default_str();
  cmd->add_option("--engine-preset", c.engine_preset, "Engine cost model preset")
      ->capture_default_str();
  cmd->add_option("--cluster", c.cluster,
                  "A pool of unequal machines, PRESET:COUNT[:MODEL+MODEL...],... (e.g. "
                  "h100-llama3-8b:2:m1,consumer:4:m1+m2); replaces --nodes and --engine-preset");
  cmd->add_option("--model-zipf", c.model_zipf,
                  "Zipf exponent of model popularity (--cluster with models; first named = most "
                  "popular)")
      ->capture_default_str();
  cmd->add_option("--slow-node", c.slow_node,
                  "Fault: this node's engine slows down (-1 = none; see --slow-at, --slow-factor)")
      ->capture_default_str();
  cmd->add_option("--slow-at", c.slow_at_s,
                  "Fault: seconds after the first arrival when --slow-node slows down")
      ->capture_default_str();
  cmd->add_option("--slow-factor", c.slow_factor,
                  "Fault: --slow-node's iterations take this many times longer (2 = half speed)")
      ->capture_default_str();
  cmd->add_option("--liars", c.liars,
                  "Fault: nodes 0..N-1 advertise every prefix and an idle engine while serving "
                  "normally (docs/adversarial.md)")
      ->capture_default_str();
  cmd->add_option("--slanderers", c.slanderers,
                  "Fault: the next N nodes after the liars list every peer as holding an hour of "
                  "work they never sent (docs/adversarial.md)")
      ->capture_default_str();
  cmd->add_option("--trimmed-listers", c.trimmed_listers,
                  "At a member a node has no reason of its own to doubt, how many of the largest "
                  "listers' shares count only up to the next largest (1: a lister alone moves "
                  "nothing); 0 = believe every list in full (an ablation)")
      ->capture_default_str();
  cmd->add_flag("!--no-trust", c.trust,
                "Ablation: believe every member's claims (no discount from claims vs delivery)");
  cmd->add_option("--forward-deadline-factor", c.forward_deadline_factor,
                  "A forward is served elsewhere when its first token is later than this many "
                  "times the expected time (at least 1 s), as the daemon's; 0 = never")
      ->capture_default_str();
  cmd->add_flag("--cot", c.cot, "MMLU chain-of-thought outputs");
  cmd->add_option("--variants", c.variants, "MMLU prefix variants per subject")
      ->capture_default_str();
  cmd->add_option("--arrivals", c.arrivals, "poisson, bursty or trace (default per workload)");
  cmd->add_option("--burst-cv", c.burst_cv, "Gap CV for bursty arrivals")->capture_default_str();
  cmd->add_option("--entry", c.entry, "uniform or sticky")->capture_default_str();
  cmd->add_option("--clients", c.entry_clients,
                  "Distinct clients entry nodes are drawn for (0: max(64, 16 x nodes); `hearsay "
                  "bench` and `hearsay demo` use 64)")
      ->capture_default_str();
  cmd->add_option("--loss", c.loss, "Gossip message loss probability")->capture_default_str();
  cmd->add_option("--landmark-stride", c.landmark_stride, "Gossip landmark stride, blocks")
      ->capture_default_str();
  cmd->add_option("--model", c.model,
                  "The one model every node serves; its prompts are keyed in the model's cache "
                  "namespace, as the daemon keys them (default: an unnamed model, no namespace)");
  cmd->add_option("--signatures", c.signatures,
                  "Signed origin state: off, modeled (bytes and publication, no crypto) or ed25519")
      ->capture_default_str();
  cmd->add_option("--routers", c.routers,
                  "Run the policy in this many central router replicas behind a load balancer (0 = "
                  "on every node; -1 = 1 for the peers' central policies, else 0)")
      ->capture_default_str();
  cmd->add_flag("--replica-sync", c.replica_sync,
                "Router replicas share their decisions (Dynamo's replica sync)");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->add_option("--records", *records,
                  "Write one decision record per request routed or served to this file (JSON "
                  "lines, as the daemon's --records)");
  auto experiment = std::make_shared<ExperimentCliFlags>();
  AddExperimentFlags(cmd, experiment.get());
  CLI::App* gossip = AddSimGossipCommand(*cmd, exit_code);
  CLI::App* demo = AddSimDemoCommand(*cmd, exit_code);
  CLI::App* ratelimit = AddSimRateLimitCommand(*cmd, exit_code);
  cmd->callback([config, json, records, experiment, gossip, demo, ratelimit, &exit_code] {
    // `hearsay sim gossip`, `demo` and `ratelimit` ran their own callbacks.
    if (gossip->parsed() || demo->parsed() || ratelimit->parsed()) return;
    if (!experiment->experiment.empty()) {
      exit_code = RunExperimentCli(*experiment);
      return;
    }
    sim::ProgressFn progress;
    if (isatty(STDERR_FILENO)) progress = DrawProgress;
    std::unique_ptr<net::RecordsFile> file;
    if (!records->empty()) {
      Result<std::unique_ptr<net::RecordsFile>> opened = net::RecordsFile::Open(*records);
      if (!opened.ok()) {
        std::fprintf(stderr, "hearsay sim: %s\n", opened.status().ToString().c_str());
        exit_code = 2;
        return;
      }
      file = std::move(*opened);
    }
    Result<sim::SimSummary> r = sim::RunSimRecorded(*config, progress, file.get());
    if (!r.ok()) {
      std::fprintf(stderr, "hearsay sim: %s\n", r.status().ToString().c_str());
      exit_code = 2;
      return;
    }
    const sim::SimSummary& s = *r;
    if (file && file->write_failed()) {
      std::fprintf(stderr, "hearsay sim: writing %s failed; its records are incomplete\n",
                   records->c_str());
      exit_code = 2;
      return;
    }
    if (*json) {
      std::printf("%s\n", sim::ToJson(s).dump().c_str());
      return;
    }
    std::printf(
        "policy %s, %d nodes, %llu requests (%llu failed) in %.1f s simulated at %.1f req/s\n"
        "ttft ms: mean %.2f  p50 %.2f  p90 %.2f  p99 %.2f   e2e mean %.2f ms\n"
        "hit rate %.3f  forwarded %.3f  load cov %.3f  retries %llu  bounces %llu\n"
        "gossip %.0f bytes/node/s   speed %.0f simulated requests per wall second\n",
        config->policy.c_str(), static_cast<int>(s.per_node_served.size()),
        static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.failed),
        s.sim_seconds, s.arrival_rate_per_s, s.mean_ttft_ms, s.p50_ttft_ms, s.p90_ttft_ms,
        s.p99_ttft_ms, s.mean_e2e_ms, s.hit_rate, s.forwarded_frac, s.load_cov,
        static_cast<unsigned long long>(s.retries), static_cast<unsigned long long>(s.bounces),
        s.gossip_bytes_per_node_s, s.sim_requests_per_wall_s);
    if (!config->cluster.empty()) {
      std::printf("requests served by an engine without their model: %llu\n",
                  static_cast<unsigned long long>(s.wrong_model));
    }
  });
}

}  // namespace hearsay::cli
