/* test_kernels_hw.c -- the hardware spec `pagedbench kernels` picks for a CUDA device name
 * (pb_kernels_hw_for_device): the SXM parts and the A100 80GB PCIe have a spec; the H100
 * PCIe / NVL, H200 NVL, GH200 and the A100 40GB PCIe have none (no spec is better than the
 * wrong one: % of peak and the cost model would use another board's numbers).
 *   build/cpu/test_kernels_hw */
#include <string.h>

#include "commands.h"
#include "pbtest.h"

static int is(const char *dev, const char *want) {
    const char *got = pb_kernels_hw_for_device(dev);
    return want ? got && !strcmp(got, want) : got == NULL;
}

PB_TEST(device_names_to_hardware_specs) {
    PB_CHECK(is("NVIDIA H100 80GB HBM3", "h100-sxm"));
    PB_CHECK(is("NVIDIA H200", "h200"));
    PB_CHECK(is("NVIDIA A100-SXM4-80GB", "a100-80gb"));
    PB_CHECK(is("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"));
    PB_CHECK(is("NVIDIA A100-SXM4-40GB", "a100-40gb"));
    PB_CHECK(is("NVIDIA H100 PCIe", NULL));
    PB_CHECK(is("NVIDIA H100 NVL", NULL));
    PB_CHECK(is("NVIDIA H200 NVL", NULL));
    PB_CHECK(is("NVIDIA GH200 480GB", NULL));
    PB_CHECK(is("NVIDIA A100-PCIE-40GB", NULL));
    PB_CHECK(is("NVIDIA L40S", NULL));
    PB_CHECK(is("Tesla V100-SXM2-16GB", NULL));
}

PB_TEST_MAIN()
