"""One module per class of bottleneck, each with its signals, thresholds and words in one place;
bench_dsl.attribution.registry lists them."""
