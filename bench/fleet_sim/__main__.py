from bench.fleet_sim.server import main

main()
