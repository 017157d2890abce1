"""The elastic launcher (`caldera launch`): rendezvous over a small key-value interface, etcd behind it."""
