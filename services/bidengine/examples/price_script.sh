#!/bin/sh
# Example bid price script for the provider's shellScript strategy (needs jq and awk).
#
# Prices like Akash's helm price_script_generic.sh: targets in USD per month, converted to a
# rate per block in the order's denomination. Reads the order on stdin, prints the bid on
# stdout, or exits 1 with a reason on stderr (then the provider does not bid).
#
# Targets (USD/month): PRICE_TARGET_CPU per thread (1.60), PRICE_TARGET_MEMORY per GiB (0.80),
# per GiB of storage PRICE_TARGET_HD_EPHEMERAL (0.02), _PERS_HDD beta1 (0.01), _PERS_SSD
# beta2 and default (0.03), _PERS_NVME beta3 (0.04); ram volumes cost memory; per unit
# PRICE_TARGET_ENDPOINT (0.05) and PRICE_TARGET_IP (5).
# PRICE_TARGET_GPU_MAPPINGS="a100=120,a100.80Gi=130,a100.80Gi.sxm=140,*=100" prices one GPU;
# lookup model.ram.interface, then without its last part, model, "*", else the highest
# price in the map (at least 100).
# Denominations: uact and the USDC IBC denoms at 1 USD per 10^6; uakt at PRICE_AKT_USD
# dollars per AKT (required for uakt orders). BLOCKS_PER_MONTH defaults to 429909.
set -eu

result=$(jq -r '
  def target($name; $default): ($ENV[$name] // $default) | tonumber;
  def gib: . / 1073741824;
  def storage_prices: {
    ephemeral: target("PRICE_TARGET_HD_EPHEMERAL"; "0.02"),
    beta1: target("PRICE_TARGET_HD_PERS_HDD"; "0.01"),
    beta2: target("PRICE_TARGET_HD_PERS_SSD"; "0.03"),
    default: target("PRICE_TARGET_HD_PERS_SSD"; "0.03"),
    beta3: target("PRICE_TARGET_HD_PERS_NVME"; "0.04"),
    ram: target("PRICE_TARGET_MEMORY"; "0.80")
  };
  def gpu_prices: ($ENV.PRICE_TARGET_GPU_MAPPINGS // "") | split(",")
    | map(select(contains("=")) | split("=") | {(.[0]): (.[1] | tonumber)}) | add // {};
  def gpu_price($map): ([.gpu.attributes.vendor // {} | .[]] | first) as $gpu
    | ([$map[]] + [100] | max) as $highest
    | if $gpu == null then [] else
        [$gpu.model, $gpu.ram, $gpu.interface | select(. != null)] as $parts
        | [($parts | join(".")), ($parts[:-1] | join(".")), $gpu.model]
      end
    | map($map[.] // empty) + [$map["*"] // $highest] | first;
  storage_prices as $storage | gpu_prices as $gpus
  | ([.resources[] | .count * (
        .cpu / 1000 * target("PRICE_TARGET_CPU"; "1.60")
      + (.memory | gib) * target("PRICE_TARGET_MEMORY"; "0.80")
      + ([.storage[] | (.size | gib) * ($storage[.class]
          // error("no price for storage class \(.class)"))] | add // 0)
      + .endpoint_quantity * target("PRICE_TARGET_ENDPOINT"; "0.05")
      + .ip_lease_quantity * target("PRICE_TARGET_IP"; "5")
      + .gpu.units * gpu_price($gpus))] | add) as $usd
  | "\($usd) \(.price.denom) \(.price.amount) \(.price_precision // 6)"
')
set -- $result

case "$2" in
  uact | ibc/12C6A0C374171B595A0A9E18B83FA09D295FB1F2D8C6DAA3AC28683471752D84 | \
  ibc/170C677610AC31DF0904FFE09CD3B5C657492170E7E52372E48756B71E56F2F1)
    usd_per_token=1 ;;
  uakt)
    usd_per_token=${PRICE_AKT_USD:-}
    if [ -z "$usd_per_token" ]; then
      echo "set PRICE_AKT_USD (USD per AKT) to price uakt orders" >&2
      exit 1
    fi ;;
  *)
    echo "denomination not supported: $2" >&2
    exit 1 ;;
esac

awk -v usd="$1" -v token="$usd_per_token" -v denom="$2" -v max="$3" -v places="$4" \
    -v blocks="${BLOCKS_PER_MONTH:-429909}" 'BEGIN {
  rate = usd / token * 1000000 / blocks
  if (rate < 10 ^ -places) rate = 10 ^ -places
  format = "%." places "f"
  if (rate > max + 0) {
    printf "requested rate is too low: min expected " format "%s\n", rate, denom > "/dev/stderr"
    exit 1
  }
  printf format "\n", rate
}'
