#pragma once
// Seed 000 §4.1, test system I (i7-2600K, 8 threads; GTX 680): the multipole matrix–vector product
// of figures 3 (single precision) and 4 (double precision), seconds, as the seed's tables list
// them.
#include <cstdint>

namespace ksum::bench {

enum Seed000Column { cpu_setup, cpu_eval, cpu_setup_mod, cpu_eval_mod, gpu_setup, gpu_eval };

struct Seed000MultipoleRow {
  std::int64_t nodes;
  double f32[6], f64[6]; // indexed by Seed000Column
};

inline constexpr Seed000MultipoleRow seed000_multipole[] = {
    {602,
     {2.67e-3, 6.70e-3, 1.94e-3, 6.04e-3, 9.91e-3, 4.07e-3},
     {3.71e-3, 7.12e-3, 3.87e-3, 7.92e-3, 1.05e-2, 6.89e-3}},
    {1562,
     {6.36e-3, 1.43e-2, 3.27e-3, 1.43e-2, 1.32e-2, 4.51e-3},
     {6.61e-3, 1.31e-2, 4.72e-3, 1.85e-2, 1.31e-2, 8.12e-3}},
    {3542,
     {1.11e-2, 3.01e-2, 6.87e-3, 3.92e-2, 2.03e-2, 4.91e-3},
     {1.23e-2, 3.05e-2, 7.50e-3, 5.06e-2, 1.96e-2, 9.98e-3}},
    {9902,
     {2.50e-2, 9.48e-2, 1.54e-2, 1.01e-1, 4.15e-2, 6.33e-3},
     {2.97e-2, 1.06e-1, 1.86e-2, 1.73e-1, 4.05e-2, 1.98e-2}},
    {39802,
     {1.44e-1, 6.30e-1, 8.51e-2, 5.63e-1, 2.24e-1, 2.98e-2},
     {1.47e-1, 6.30e-1, 9.16e-2, 5.81e-1, 2.20e-1, 9.77e-2}},
    {89702,
     {3.63e-1, 1.83e+0, 1.85e-1, 1.56e+0, 4.72e-1, 6.11e-2},
     {3.20e-1, 2.02e+0, 2.14e-1, 1.80e+0, 4.91e-1, 2.50e-1}}};

} // namespace ksum::bench
