"""`gpufabric demo`: the lab brought up end to end (switches and hosts), proven, and reported."""
