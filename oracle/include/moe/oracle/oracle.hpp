#pragma once
// Everything the oracle offers, for users who want one include.
#include "moe/oracle/args.hpp"
#include "moe/oracle/capacity.hpp"
#include "moe/oracle/certified/forward.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/certified/interval.hpp"
#include "moe/oracle/combine.hpp"
#include "moe/oracle/context.hpp"
#include "moe/oracle/error.hpp"
#include "moe/oracle/family.hpp"
#include "moe/oracle/permute.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"
