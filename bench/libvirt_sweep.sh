#!/bin/bash
# One libvirt NIC sweep (3 models x 2 directions x 3 rounds of 3 s) on netsweep's guest image
# (`netsweep lab vm-image` first), with libvirtd and virtlogd started inside a network namespace
# of its own (root; no other libvirtd may run). Prints the wall time, the runner's overhead per
# run and the number of guest boots; everything it made is removed at the end.
#   sudo bench/libvirt_sweep.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -s /run/libvirtd.pid ] && kill -0 "$(cat /run/libvirtd.pid)" 2>/dev/null; then
  echo "a libvirtd already runs here: its TAPs would not be in this bench's namespace" >&2; exit 1
fi
NS=nslvb; D=/tmp/lvb; DOM=nsbench
cleanup() { virsh -c qemu:///system destroy $DOM >/dev/null 2>&1; virsh -c qemu:///system undefine $DOM >/dev/null 2>&1;
  kill $(cat /run/libvirtd.pid 2>/dev/null) $(cat /run/virtlogd.pid 2>/dev/null) 2>/dev/null; sleep 1; ip netns del $NS 2>/dev/null; }
trap cleanup EXIT
rm -rf $D; mkdir -p $D; chmod 755 $D
cp /var/cache/netsweep/vm/kernel/vmlinux /var/cache/netsweep/vm/initrd.cpio $D/
ip netns add $NS; ip -n $NS link set lo up; ip -n $NS link add br0 type bridge; ip -n $NS addr add 198.18.0.1/24 dev br0; ip -n $NS link set br0 up
ip netns exec $NS virtlogd -d; ip netns exec $NS libvirtd -d
for i in $(seq 50); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.2; done
cat > $D/dom.xml <<X
<domain type='qemu'><name>$DOM</name><memory unit='MiB'>256</memory><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type><kernel>$D/vmlinux</kernel><initrd>$D/initrd.cpio</initrd>
<cmdline>console=ttyS0 loglevel=3 panic=-1 netsweep.ip=198.18.0.2/24 netsweep.port=5201</cmdline></os>
<on_reboot>destroy</on_reboot><devices><interface type='bridge'><mac address='52:54:00:12:34:09'/><source bridge='br0'/><model type='rtl8139'/></interface>
<serial type='file'><source path='$D/console.log' append='on'/><target port='0'/></serial></devices></domain>
X
virsh -c qemu:///system define $D/dom.xml >/dev/null && virsh -c qemu:///system start $DOM >/dev/null
for i in $(seq 600); do grep -q "netsweep-guest: ready" $D/console.log 2>/dev/null && break; sleep 0.2; done
cat > $D/plan.toml <<X
name = "lvbench"
[target]
kind = "libvirt"
domain = "$DOM"
uri = "qemu:///system"
host = "198.18.0.2:5201"
server = "iperf3"
shutdown_timeout = "0s"
[test]
duration = "3s"
[matrix]
nic = ["virtio", "e1000", "rtl8139"]
reverse = [false, true]
[repeat]
count = 3
X
cd $D
START=$(date +%s.%N)
timeout 900 ip netns exec $NS "$ROOT/target/release/netsweep" run plan.toml --db b.db > run.txt 2>&1
END=$(date +%s.%N)
echo "wall $(echo "$END - $START" | bc) s for 18 runs of 3 s"
grep -E "overhead|matters|libvirt domain" run.txt
echo "boots: $(grep -c 'driver=' console.log) (the first by this script)"
