"""caldera on Kubernetes: the REST client (`client`, `kubeconfig`) and the Kubernetes mode built on it.

Only this package talks to a Kubernetes API server (httpx is allowed here and in caldera.client).
"""
