# Sourced by the Vulkan tests, with $kiln set: the test passes as SKIPPED
# (status 0) when `kiln devices` lists no vulkan device 0, as on a machine
# with neither Mesa's lavapipe nor a GPU driver; otherwise the listing is
# left in $vulkan_listing.
vulkan_listing=$("$kiln" devices 2>&1)
if ! awk '$1 == "backend" { on = ($2 == "vulkan") } on && /^  device 0:/ { found = 1 } END { exit !found }' \
    <<<"$vulkan_listing"; then
  echo "SKIPPED: no Vulkan device (kiln devices found no vulkan device 0)"
  exit 0
fi
