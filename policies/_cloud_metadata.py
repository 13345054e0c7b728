"""Cloud metadata and platform services: the addresses and names egress never reaches.

A cloud instance can ask a service on a well-known address for its own credentials, user
data and configuration; a tool that can be talked into requesting such a URL hands them to
whoever wrote the URL. Most of these addresses lie in link-local or unique-local ranges that
:mod:`._addresses` refuses anyway, but not all: Azure's platform endpoint 168.63.129.16 is
a public address. Every one is listed here, with the document that names it, so that

* the refusal names the service, and
* a ``private_exceptions`` entry opens one only by naming that exact address -- a CIDR
  such as ``169.254.0.0/16`` or ``100.64.0.0/10`` never opens a metadata service inside it.

Host names are refused by name, before any lookup, because some of them resolve only on the
instance (``metadata.google.internal``) and one resolves to a public address
(Equinix Metal's metadata host, which answers by the caller's source address).

To add a service: one row, with the provider and a source URL.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class MetadataService:
    """One well-known address of a cloud metadata or platform service."""

    address: IPAddress
    service: str
    """Who runs it and what it serves."""
    sources: tuple[str, ...]
    """Where the providers document the address."""


def _service(address: str, service: str, *sources: str) -> MetadataService:
    return MetadataService(ipaddress.ip_address(address), service, sources)


_AWS_IMDS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html"
_AWS_DNS = "https://docs.aws.amazon.com/vpc/latest/userguide/AmazonDNS-concepts.html"
_AWS_TIME = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/set-time.html"
_AWS_ECS = "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html"
_AWS_EKS = "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html"
_GCP = "https://cloud.google.com/compute/docs/metadata/querying-metadata"
_AZURE_IMDS = "https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service"
_AZURE_WIRE = "https://learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16"
_OCI = "https://docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm"
_OCI_CLASSIC = (
    "https://docs.oracle.com/en/cloud/iaas-classic/compute-iaas-cloud/stcsg/"
    "retrieving-instance-metadata.html"
)
_ALIBABA = "https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata"
_TENCENT = "https://www.tencentcloud.com/document/product/213/4934"
_DIGITALOCEAN = "https://docs.digitalocean.com/reference/api/metadata/"
_HETZNER = "https://docs.hetzner.cloud/#server-metadata"
_SCALEWAY = "https://docs.cloud-init.io/en/latest/reference/datasources/scaleway.html"
_AKAMAI = "https://techdocs.akamai.com/cloud-computing/docs/metadata-service-api"
_OPENSTACK = "https://docs.openstack.org/nova/latest/user/metadata.html"
_EQUINIX = "https://deploy.equinix.com/developers/docs/metal/server-metadata/metadata/"

METADATA_SERVICES: tuple[MetadataService, ...] = (
    # outside every non-public range: refused only because it is listed here
    _service(
        "168.63.129.16",
        "Azure WireServer, the platform's DNS, health and agent endpoint",
        _AZURE_WIRE,
    ),
    # inside link-local 169.254.0.0/16
    _service(
        "169.254.169.254",
        "instance metadata of AWS, Google Cloud, Azure, Oracle Cloud, DigitalOcean, Hetzner, "
        "Akamai and OpenStack",
        *(_AWS_IMDS, _GCP, _AZURE_IMDS, _OCI, _DIGITALOCEAN, _HETZNER, _AKAMAI, _OPENSTACK),
    ),
    _service("169.254.169.253", "AWS Amazon DNS resolver", _AWS_DNS),
    _service("169.254.169.123", "AWS Time Sync Service", _AWS_TIME),
    _service("169.254.170.2", "AWS ECS task metadata and credentials", _AWS_ECS),
    _service("169.254.170.23", "AWS EKS Pod Identity credentials", _AWS_EKS),
    _service("169.254.0.23", "Tencent Cloud instance metadata", _TENCENT),
    _service("169.254.42.42", "Scaleway instance metadata", _SCALEWAY),
    # inside carrier-grade NAT 100.64.0.0/10 and IETF protocol assignments 192.0.0.0/24
    _service("100.100.100.200", "Alibaba Cloud ECS instance metadata", _ALIBABA),
    _service("192.0.0.192", "Oracle Cloud Infrastructure Classic instance metadata", _OCI_CLASSIC),
    # IPv6, inside unique-local fc00::/7 or link-local fe80::/10
    _service("fd00:ec2::254", "AWS instance metadata (IMDS) over IPv6", _AWS_IMDS),
    _service("fd00:ec2::253", "AWS Amazon DNS resolver over IPv6", _AWS_DNS),
    _service("fd00:ec2::123", "AWS Time Sync Service over IPv6", _AWS_TIME),
    _service("fd00:ec2::23", "AWS EKS Pod Identity credentials over IPv6", _AWS_EKS),
    _service("fd20:ce::254", "Google Cloud metadata server over IPv6", _GCP),
    _service("fd00:c1::a9fe:a9fe", "Oracle Cloud instance metadata over IPv6", _OCI),
    _service("fd00:42::42", "Scaleway instance metadata over IPv6", _SCALEWAY),
    _service("fd00:a9fe:a9fe::1", "Akamai (Linode) instance metadata over IPv6", _AKAMAI),
    _service("fe80::a9fe:a9fe", "OpenStack instance metadata over IPv6", _OPENSTACK),
)
"""Every listed address, with who serves what there."""

METADATA_HOSTS: dict[str, tuple[str, str]] = {
    "metadata.google.internal": ("Google Cloud metadata server", _GCP),
    "metadata": ("Google Cloud metadata server (short name)", _GCP),
    "instance-data": ("AWS instance metadata (VPC DNS name)", _AWS_IMDS),
    "instance-data.ec2.internal": ("AWS instance metadata (VPC DNS name)", _AWS_IMDS),
    "metadata.tencentyun.com": ("Tencent Cloud instance metadata", _TENCENT),
    "metadata.platformequinix.com": ("Equinix Metal instance metadata", _EQUINIX),
    "metadata.packet.net": ("Equinix Metal (Packet) instance metadata", _EQUINIX),
}
"""Host names (lower case, no trailing dot) that name a metadata service: service, source."""

_BY_ADDRESS = {entry.address: entry for entry in METADATA_SERVICES}


def metadata_service(address: IPAddress) -> MetadataService | None:
    """The metadata service at exactly ``address`` (scope ignored), if it is one."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        address = ipaddress.IPv6Address(address.packed)
    return _BY_ADDRESS.get(address)


def metadata_host(host: str) -> str | None:
    """The service a host name names (any case, trailing dot or not), if it names one."""
    entry = METADATA_HOSTS.get(host.lower().removesuffix("."))
    return entry[0] if entry is not None else None
