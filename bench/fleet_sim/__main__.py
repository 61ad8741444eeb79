from fleet_sim.server import main

main()
