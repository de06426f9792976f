/*
 * cpu/vectorize.h — included by every CPU body file before any function: lets gcc vectorise the
 * bodies' loops at -O2. gcc 12's -O2 uses the "very-cheap" vectoriser cost model, which refuses
 * any loop whose trip count is unknown (it would need a scalar epilogue) — that is every loop
 * over a StarPU buffer. The "cheap" model (the -O3 default before gcc 12 widened it) allows the
 * epilogue and a runtime alias check. clang vectorises such loops at -O2 already.
 */
#ifndef VEIL_CPU_VECTORIZE_H
#define VEIL_CPU_VECTORIZE_H

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=cheap")
#endif

#endif /* VEIL_CPU_VECTORIZE_H */
