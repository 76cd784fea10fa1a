"""What every test tier shares and no test module should restate (one place each; more moves here over time)."""
