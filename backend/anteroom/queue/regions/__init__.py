"""One room across regions: each region's summary, the coordinator's leases, etcd beneath."""
