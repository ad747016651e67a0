// The statuses a kernel under test returns, by route_abi.h's names (MOE_ROUTE_OK ..
// MOE_ROUTE_EBADPARAMS; moe_dispatch_v1 and moe_layer_v1 share them), for the code that
// calls kernels and the verdicts that judge what they returned. fuzz/routers is fuzz/'s one
// door into impl/ (scripts/lint): the C ABI's names reach the rest of fuzz/ through here.
#pragma once

#include "moe/route_abi.h"
