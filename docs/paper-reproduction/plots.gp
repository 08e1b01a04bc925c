# Draws the experiment's PNGs: run `gnuplot plots.gp` in this folder.
set datafile separator ','
set terminal pngcairo size 900,560 noenhanced
set key outside right
set grid
set output 'delay_ms_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'mean_ttft_ms'
set title 'mean_ttft_ms vs delay_ms'
plot for [i=2:9] 'plot_delay_ms_mean_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'delay_ms_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'p99_ttft_ms'
set title 'p99_ttft_ms vs delay_ms'
plot for [i=2:9] 'plot_delay_ms_p99_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'delay_ms_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'hit_rate'
set title 'hit_rate vs delay_ms'
plot for [i=2:9] 'plot_delay_ms_hit_rate.csv' using 1:i with linespoints title columnheader(i)
set output 'delay_ms_load_cov.png'
set logscale x
unset logscale y
set xlabel 'one-way network delay (ms)'
set ylabel 'load_cov'
set title 'load_cov vs delay_ms'
plot for [i=2:9] 'plot_delay_ms_load_cov.csv' using 1:i with linespoints title columnheader(i)
set output 'zipf_mean_ttft_ms.png'
unset logscale x
set logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'mean_ttft_ms'
set title 'mean_ttft_ms vs zipf'
plot for [i=2:9] 'plot_zipf_mean_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'zipf_p99_ttft_ms.png'
unset logscale x
set logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'p99_ttft_ms'
set title 'p99_ttft_ms vs zipf'
plot for [i=2:9] 'plot_zipf_p99_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'zipf_hit_rate.png'
unset logscale x
unset logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'hit_rate'
set title 'hit_rate vs zipf'
plot for [i=2:9] 'plot_zipf_hit_rate.csv' using 1:i with linespoints title columnheader(i)
set output 'zipf_load_cov.png'
unset logscale x
unset logscale y
set xlabel 'Zipf exponent s of subject popularity'
set ylabel 'load_cov'
set title 'load_cov vs zipf'
plot for [i=2:9] 'plot_zipf_load_cov.csv' using 1:i with linespoints title columnheader(i)
set output 'nodes_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'number of nodes'
set ylabel 'mean_ttft_ms'
set title 'mean_ttft_ms vs nodes'
plot for [i=2:9] 'plot_nodes_mean_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'nodes_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'number of nodes'
set ylabel 'p99_ttft_ms'
set title 'p99_ttft_ms vs nodes'
plot for [i=2:9] 'plot_nodes_p99_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'nodes_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'number of nodes'
set ylabel 'hit_rate'
set title 'hit_rate vs nodes'
plot for [i=2:9] 'plot_nodes_hit_rate.csv' using 1:i with linespoints title columnheader(i)
set output 'nodes_load_cov.png'
set logscale x
unset logscale y
set xlabel 'number of nodes'
set ylabel 'load_cov'
set title 'load_cov vs nodes'
plot for [i=2:9] 'plot_nodes_load_cov.csv' using 1:i with linespoints title columnheader(i)
set output 'gossip_ms_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'mean_ttft_ms'
set title 'mean_ttft_ms vs gossip_ms'
plot for [i=2:9] 'plot_gossip_ms_mean_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'gossip_ms_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'p99_ttft_ms'
set title 'p99_ttft_ms vs gossip_ms'
plot for [i=2:9] 'plot_gossip_ms_p99_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'gossip_ms_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'hit_rate'
set title 'hit_rate vs gossip_ms'
plot for [i=2:9] 'plot_gossip_ms_hit_rate.csv' using 1:i with linespoints title columnheader(i)
set output 'gossip_ms_load_cov.png'
set logscale x
unset logscale y
set xlabel 'gossip interval (ms)'
set ylabel 'load_cov'
set title 'load_cov vs gossip_ms'
plot for [i=2:9] 'plot_gossip_ms_load_cov.csv' using 1:i with linespoints title columnheader(i)
set output 'capacity_tokens_mean_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'mean_ttft_ms'
set title 'mean_ttft_ms vs capacity_tokens'
plot for [i=2:9] 'plot_capacity_tokens_mean_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'capacity_tokens_p99_ttft_ms.png'
set logscale x
set logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'p99_ttft_ms'
set title 'p99_ttft_ms vs capacity_tokens'
plot for [i=2:9] 'plot_capacity_tokens_p99_ttft_ms.csv' using 1:i with linespoints title columnheader(i)
set output 'capacity_tokens_hit_rate.png'
set logscale x
unset logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'hit_rate'
set title 'hit_rate vs capacity_tokens'
plot for [i=2:9] 'plot_capacity_tokens_hit_rate.csv' using 1:i with linespoints title columnheader(i)
set output 'capacity_tokens_load_cov.png'
set logscale x
unset logscale y
set xlabel 'KV cache capacity per node (tokens)'
set ylabel 'load_cov'
set title 'load_cov vs capacity_tokens'
plot for [i=2:9] 'plot_capacity_tokens_load_cov.csv' using 1:i with linespoints title columnheader(i)
