#include "moe/oracle/certified/forward.hpp"
