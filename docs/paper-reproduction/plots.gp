# Draws the experiment's PNGs: run `gnuplot plots.gp` in this folder.
set datafile separator ','
set terminal pngcairo size 900,560 noenhanced
set key outside right
set grid
set output 'delay_ms_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'mean time to first token (ms)'
set title 'Mean time to first token by one-way network delay (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_delay_ms_mean_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'delay_ms_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'p99 time to first token (ms)'
set title 'P99 time to first token by one-way network delay (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_delay_ms_p99_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'delay_ms_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'token cache hit rate (cached / prompt tokens)'
set title 'Token cache hit rate by one-way network delay (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_delay_ms_hit_rate.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'delay_ms_load_cov.png'
set logscale x
unset logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'load imbalance (CoV of per-node prefill work)'
set title 'Load imbalance by one-way network delay (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_delay_ms_load_cov.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'zipf_mean_ttft_ms.png'
unset logscale x
set logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'mean time to first token (ms)'
set title 'Mean time to first token by Zipf exponent s of subject popularity (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_zipf_mean_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'zipf_p99_ttft_ms.png'
unset logscale x
set logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'p99 time to first token (ms)'
set title 'P99 time to first token by Zipf exponent s of subject popularity (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_zipf_p99_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'zipf_hit_rate.png'
unset logscale x
unset logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'token cache hit rate (cached / prompt tokens)'
set title 'Token cache hit rate by Zipf exponent s of subject popularity (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_zipf_hit_rate.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'zipf_load_cov.png'
unset logscale x
unset logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'load imbalance (CoV of per-node prefill work)'
set title 'Load imbalance by Zipf exponent s of subject popularity (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_zipf_load_cov.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'nodes_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'number of nodes'
set ylabel 'mean time to first token (ms)'
set title 'Mean time to first token by number of nodes (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_nodes_mean_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'nodes_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'number of nodes'
set ylabel 'p99 time to first token (ms)'
set title 'P99 time to first token by number of nodes (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_nodes_p99_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'nodes_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'number of nodes'
set ylabel 'token cache hit rate (cached / prompt tokens)'
set title 'Token cache hit rate by number of nodes (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_nodes_hit_rate.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'nodes_load_cov.png'
set logscale x
unset logscale y
set xlabel 'number of nodes'
set ylabel 'load imbalance (CoV of per-node prefill work)'
set title 'Load imbalance by number of nodes (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_nodes_load_cov.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'gossip_ms_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'mean time to first token (ms)'
set title 'Mean time to first token by gossip interval (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_gossip_ms_mean_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'gossip_ms_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'p99 time to first token (ms)'
set title 'P99 time to first token by gossip interval (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_gossip_ms_p99_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'gossip_ms_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'token cache hit rate (cached / prompt tokens)'
set title 'Token cache hit rate by gossip interval (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_gossip_ms_hit_rate.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'gossip_ms_load_cov.png'
set logscale x
unset logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'load imbalance (CoV of per-node prefill work)'
set title 'Load imbalance by gossip interval (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_gossip_ms_load_cov.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'capacity_tokens_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'mean time to first token (ms)'
set title 'Mean time to first token by KV cache capacity per node (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_capacity_tokens_mean_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'capacity_tokens_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'p99 time to first token (ms)'
set title 'P99 time to first token by KV cache capacity per node (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_capacity_tokens_p99_ttft_ms.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'capacity_tokens_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'token cache hit rate (cached / prompt tokens)'
set title 'Token cache hit rate by KV cache capacity per node (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_capacity_tokens_hit_rate.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
set output 'capacity_tokens_load_cov.png'
set logscale x
unset logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'load imbalance (CoV of per-node prefill work)'
set title 'Load imbalance by KV cache capacity per node (mean of 3 seed(s); bars: ± 1 sd over seeds)'
set key title 'routing policy'
plot for [i=0:7] 'plot_capacity_tokens_load_cov.csv' using 1:(column(2+2*i)):(column(3+2*i)) with yerrorlines title columnheader(2+2*i)
