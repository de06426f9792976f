#include "veil.h"
