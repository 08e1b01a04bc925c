# Draws the pool experiment's PNGs: run `gnuplot plots.gp` in this folder.
set datafile separator ','
set datafile columnheaders
set grid
set key top left font ',9'
set terminal pngcairo size 900,500 noenhanced
set output 'ttft.png'
set title 'Mean TTFT per section (error bars: stddev over seeds)'
set boxwidth 0.9
set style fill solid 0.6 border -1
set offsets 1, 1, 0, 0
set yrange [0:*]
set ylabel 'mean TTFT (ms)'
plot 'plot_ttft.csv' using ($0*5+1.5):(NaN):xtic(1) notitle, 'plot_ttft.csv' using ($0*5+0):2:3 with boxerrorbars title 'hearsay', 'plot_ttft.csv' using ($0*5+1):4:5 with boxerrorbars title 'oracle', 'plot_ttft.csv' using ($0*5+2):6:7 with boxerrorbars title 'least-loaded', 'plot_ttft.csv' using ($0*5+3):8:9 with boxerrorbars title 'paper'
unset offsets
unset xtics
set xtics
set yrange [0:*]
set boxwidth
set key bottom left
set terminal pngcairo size 900,500 noenhanced
set output 'slow_share.png'
set title "Node 3's share of arrivals per second; its engine runs at half speed from t = 30 s (mean over seeds)"
set arrow 1 from 30, graph 0 to 30, graph 1 nohead dashtype 2
set xlabel 'virtual time (s, from the first arrival)'
set ylabel 'share of arrivals served by the slowed node'
plot 'slow_share.csv' using 1:2 with linespoints title 'hearsay', 'slow_share.csv' using 1:3 with linespoints title 'oracle', 'slow_share.csv' using 1:4 with linespoints title 'least-loaded', 'slow_share.csv' using 1:5 with linespoints title 'paper'
