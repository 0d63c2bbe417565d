"""The fleetmon agent: samples NVML on a GPU node and serves the results."""
