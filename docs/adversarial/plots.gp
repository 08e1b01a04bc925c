# Draws the adversarial experiment's PNGs: run `gnuplot plots.gp` in this folder.
set datafile separator ','
set datafile columnheaders
set grid
set key top left font ',9'
set xlabel 'liars (members that advertise every prefix and an idle engine)'
set ylabel 'mean TTFT (ms, log scale)'
set logscale y
set xrange [-0.5:3.5]
set xtics (0, 1, 3)
set terminal pngcairo size 800,480 noenhanced
set output 'ttft_mmlu_8.png'
set title "MMLU-like, 8 nodes: mean TTFT against the number of liars\n(error bars: stddev over 3 seeds)"
plot 'plot_mmlu_8.csv' using 1:2:3 with yerrorlines title 'hearsay', 'plot_mmlu_8.csv' using 1:4:5 with yerrorlines title 'hearsay-all-lists', 'plot_mmlu_8.csv' using 1:6:7 with yerrorlines title 'hearsay-trusting', 'plot_mmlu_8.csv' using 1:8:9 with yerrorlines title 'paper'
set terminal pngcairo size 800,480 noenhanced
set output 'ttft_mmlu_32.png'
set title "MMLU-like, 32 nodes: mean TTFT against the number of liars\n(error bars: stddev over 3 seeds)"
plot 'plot_mmlu_32.csv' using 1:2:3 with yerrorlines title 'hearsay', 'plot_mmlu_32.csv' using 1:4:5 with yerrorlines title 'hearsay-all-lists', 'plot_mmlu_32.csv' using 1:6:7 with yerrorlines title 'hearsay-trusting', 'plot_mmlu_32.csv' using 1:8:9 with yerrorlines title 'paper'
set terminal pngcairo size 800,480 noenhanced
set output 'ttft_trace_8.png'
set title "Mooncake trace, 8 nodes: mean TTFT against the number of liars\n(error bars: stddev over 3 seeds)"
plot 'plot_trace_8.csv' using 1:2:3 with yerrorlines title 'hearsay', 'plot_trace_8.csv' using 1:4:5 with yerrorlines title 'hearsay-all-lists', 'plot_trace_8.csv' using 1:6:7 with yerrorlines title 'hearsay-trusting', 'plot_trace_8.csv' using 1:8:9 with yerrorlines title 'paper'
set terminal pngcairo size 800,480 noenhanced
set output 'ttft_trace_32.png'
set title "Mooncake trace, 32 nodes: mean TTFT against the number of liars\n(error bars: stddev over 3 seeds)"
plot 'plot_trace_32.csv' using 1:2:3 with yerrorlines title 'hearsay', 'plot_trace_32.csv' using 1:4:5 with yerrorlines title 'hearsay-all-lists', 'plot_trace_32.csv' using 1:6:7 with yerrorlines title 'hearsay-trusting', 'plot_trace_32.csv' using 1:8:9 with yerrorlines title 'paper'
