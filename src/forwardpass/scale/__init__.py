"""Scale-out on Ray: `serve --replicas N` runs N engine replicas as Ray Serve deployments behind one ingress that
keeps the single server's routes, routes by prompt prefix, fails requests over when a replica dies, and reports
every replica's metrics; `batch --replicas N` answers a file through Ray Data over engine actors. Ray is the
optional extra `forwardpass[ray]`; nothing here is imported without it."""
