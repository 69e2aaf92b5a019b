"""kubesim: a local Kubernetes API server simulator for tests and for running without a cluster."""

from kubesim.cluster import ClusterSpec, GpuSpec, NodeSpec
from kubesim.controllers import ControllerSettings
from kubesim.faults import Faults
from kubesim.sim import KubeSim

__all__ = ["ClusterSpec", "ControllerSettings", "Faults", "GpuSpec", "KubeSim", "NodeSpec"]
