/-
  moe-oracle: the MoE routing spec of docs/design.md section 1, in Lean 4 core (no Mathlib).

  The names are TorchLean's (`Spec.MoE.beats`, `rank`, `kept`, `keptExperts`,
  `Activation.softmaxVecSpec`, `gatesVecSpec`, `combineSpec`, `forwardSpec`,
  `sparseForwardSpec`, `capacityKeeps`, `switchCapacity`, `switchBalance`), so that
  `grep beats` finds the Lean, the C++ oracle and the vectors together.

  Vectors are `List`s indexed by `Nat` instead of `Fin E → α`: the same functions, cheap
  to evaluate. Out-of-range reads give `Context.zero` (never happens: every index used
  below is `< length`).

  Where the seeds leave an order open, this file fixes it as docs/design.md section 1 does:
  `keptExperts` lists the kept experts best first; every sum is a left fold seeded with
  zero, in index order.

  Why the small list library below: the WebAssembly Lean evaluates `#eval`/`#guard` with
  its interpreter, which cannot call many core list/array functions (it reports
  "Unknown constant `List.lengthTR._redArg`" and the like), nor take an extern such as
  `Float32.add` as a closure (no `Float32.add._boxed`). Functions defined in this file are
  compiled with it and always evaluate, so the spec uses only them, and the contexts'
  operations are small `@[noinline]` wrappers defined here.

  `regen` runs this file and `Export.lean` as one file (Spec first), so the `#guard`
  checks at the end of this file run on every regeneration: a wrong Lean side fails it.
-/

namespace Lst

def foldl {β γ : Type} (f : γ → β → γ) : γ → List β → γ
  | acc, [] => acc
  | acc, x :: xs => foldl f (f acc x) xs

def len {β : Type} : List β → Nat
  | [] => 0
  | _ :: xs => len xs + 1

def app {β : Type} : List β → List β → List β
  | [], ys => ys
  | x :: xs, ys => x :: app xs ys

def map {β γ : Type} (f : β → γ) : List β → List γ
  | [] => []
  | x :: xs => f x :: map f xs

def filter {β : Type} (p : β → Bool) : List β → List β
  | [] => []
  | x :: xs => if p x then x :: filter p xs else filter p xs

def filterMap {β γ : Type} (f : β → Option γ) : List β → List γ
  | [] => []
  | x :: xs => match f x with
    | some y => y :: filterMap f xs
    | none => filterMap f xs

def any {β : Type} (p : β → Bool) : List β → Bool
  | [] => false
  | x :: xs => p x || any p xs

def all {β : Type} (p : β → Bool) : List β → Bool
  | [] => true
  | x :: xs => p x && all p xs

def find? {β : Type} (p : β → Bool) : List β → Option β
  | [] => none
  | x :: xs => if p x then some x else find? p xs

def getD {β : Type} : List β → Nat → β → β
  | [], _, d => d
  | x :: _, 0, _ => x
  | _ :: xs, n + 1, d => getD xs n d

def take {β : Type} : Nat → List β → List β
  | 0, _ => []
  | _, [] => []
  | n + 1, x :: xs => x :: take n xs

def drop {β : Type} : Nat → List β → List β
  | 0, xs => xs
  | _, [] => []
  | n + 1, _ :: xs => drop n xs

def setAt {β : Type} : List β → Nat → β → List β
  | [], _, _ => []
  | _ :: xs, 0, v => v :: xs
  | x :: xs, n + 1, v => x :: setAt xs n v

def flatMap {β γ : Type} (f : β → List γ) : List β → List γ
  | [] => []
  | x :: xs => app (f x) (flatMap f xs)

def replicate {β : Type} : Nat → β → List β
  | 0, _ => []
  | n + 1, x => x :: replicate n x

/-- `[0, 1, …, n - 1]`. -/
def range (n : Nat) : List Nat := foldl (fun acc _ => app acc [len acc]) [] (replicate n ())

def zip {β γ : Type} : List β → List γ → List (β × γ)
  | x :: xs, y :: ys => (x, y) :: zip xs ys
  | _, _ => []

def eqBy {β : Type} (eq : β → β → Bool) : List β → List β → Bool
  | [], [] => true
  | x :: xs, y :: ys => eq x y && eqBy eq xs ys
  | _, _ => false

def insertSorted (x : Nat) : List Nat → List Nat
  | [] => [x]
  | y :: ys => if x ≤ y then x :: y :: ys else y :: insertSorted x ys

def sort (xs : List Nat) : List Nat := foldl (fun acc x => insertSorted x acc) [] xs

end Lst

/-- A scalar context: TorchLean's `Context` without `exp` (so that `Rat` has one).
`max` is Lean's `maxOfLe` (`if x ≤ y then y else x`); `gtBool x y = decide (x > y)`. -/
class Context (α : Type) where
  zero : α
  add : α → α → α
  sub : α → α → α
  mul : α → α → α
  div : α → α → α
  max : α → α → α
  gtBool : α → α → Bool

/-- A context with an exponential: `Float` and `Float32`, not `Rat`. -/
class ExpContext (α : Type) extends Context α where
  exp : α → α

/-! The operations of each context, one `@[noinline]` definition each (see the top). -/

@[noinline] def f64zero : Float := Float.ofBits 0
@[noinline] def f64add (x y : Float) : Float := x + y
@[noinline] def f64sub (x y : Float) : Float := x - y
@[noinline] def f64mul (x y : Float) : Float := x * y
@[noinline] def f64div (x y : Float) : Float := x / y
@[noinline] def f64max (x y : Float) : Float := if x ≤ y then y else x
@[noinline] def f64gt (x y : Float) : Bool := decide (x > y)
@[noinline] def f64exp (x : Float) : Float := Float.exp x

@[noinline] def f32zero : Float32 := Float32.ofBits 0
@[noinline] def f32add (x y : Float32) : Float32 := x + y
@[noinline] def f32sub (x y : Float32) : Float32 := x - y
@[noinline] def f32mul (x y : Float32) : Float32 := x * y
@[noinline] def f32div (x y : Float32) : Float32 := x / y
@[noinline] def f32max (x y : Float32) : Float32 := if x ≤ y then y else x
@[noinline] def f32gt (x y : Float32) : Bool := decide (x > y)
@[noinline] def f32exp (x : Float32) : Float32 := Float32.exp x
@[noinline] def f32toF64 (x : Float32) : Float := x.toFloat
@[noinline] def f32bits (x : Float32) : Nat := x.toBits.toNat
@[noinline] def f64bits (x : Float) : Nat := x.toBits.toNat
@[noinline] def f32isNaN (x : Float32) : Bool := x.isNaN
@[noinline] def f64isNaN (x : Float) : Bool := x.isNaN

@[noinline] def ratZero : Rat := 0
@[noinline] def ratAdd (x y : Rat) : Rat := x + y
@[noinline] def ratSub (x y : Rat) : Rat := x - y
@[noinline] def ratMul (x y : Rat) : Rat := x * y
@[noinline] def ratDiv (x y : Rat) : Rat := x / y
@[noinline] def ratMax (x y : Rat) : Rat := if x ≤ y then y else x
@[noinline] def ratGt (x y : Rat) : Bool := decide (x > y)
@[noinline] def ratOfNat (n : Nat) : Rat := (n : Rat)
@[noinline] def ratEq (x y : Rat) : Bool := x.num == y.num && x.den == y.den

instance : ExpContext Float where
  zero := f64zero
  add := f64add
  sub := f64sub
  mul := f64mul
  div := f64div
  max := f64max
  gtBool := f64gt
  exp := f64exp

instance : ExpContext Float32 where
  zero := f32zero
  add := f32add
  sub := f32sub
  mul := f32mul
  div := f32div
  max := f32max
  gtBool := f32gt
  exp := f32exp

instance : Context Rat where
  zero := ratZero
  add := ratAdd
  sub := ratSub
  mul := ratMul
  div := ratDiv
  max := ratMax
  gtBool := ratGt

namespace Spec.MoE

variable {α : Type} [Context α]

/-- Score of expert `i` (zero past the end; callers stay in range). -/
def score (s : List α) (i : Nat) : α := Lst.getD s i Context.zero

/-- `beats s j i`: expert `j` outranks expert `i`; exact ties go to the lower index
(`beats_eq_true`: `s j > s i ∨ (j < i ∧ ¬ s i > s j)`). -/
def beats (s : List α) (j i : Nat) : Bool :=
  Context.gtBool (score s j) (score s i) ||
    (decide (j < i) && !(Context.gtBool (score s i) (score s j)))

/-- `rank s i`: how many experts beat `i` (0 = best; `rank_lt`, `rank_injective`). -/
def rank (s : List α) (i : Nat) : Nat :=
  Lst.foldl (fun n j => if beats s j i then n + 1 else n) 0 (Lst.range (Lst.len s))

/-- All ranks, in expert order. -/
def ranks (s : List α) : List Nat := Lst.map (rank s) (Lst.range (Lst.len s))

/-- `kept k s i`: expert `i` is among the best `k` (`card_kept`: `min k E` are kept). -/
def kept (k : Nat) (s : List α) (i : Nat) : Bool := decide (rank s i < k)

/-- The kept experts, best first (`length_keptExperts`: `min k E` of them): position `r`
holds the expert of rank `r`. -/
def keptExperts (k : Nat) (s : List α) : List Nat :=
  let r := ranks s
  let E := Lst.len s
  Lst.filterMap (fun pos => Lst.find? (fun i => Lst.getD r i 0 == pos) (Lst.range E))
    (Lst.range (min k E))

/-- Left fold of `add` seeded with zero, in index order: `((0 + v₀) + v₁) + …`. -/
def sumSpec (v : List α) : α := Lst.foldl Context.add Context.zero v

end Spec.MoE

namespace Activation

variable {α : Type} [Context α]

/-- Every intermediate of TorchLean's `softmaxVecSpec`: the max `m`, the exponentials
`exps`, the denominator `denom` and the output `out`. -/
structure SoftmaxTrace (α : Type) where
  m : α
  exps : List α
  denom : α
  out : List α

/-- `softmaxVecSpec` with the exponential supplied, in TorchLean's order of operations:
n = 0 gives x; else m = left fold of `max` over x₀..xₙ₋₁ seeded with x₀,
eᵢ = exp(xᵢ - m), d = ((0 + e₀) + e₁) + …, outᵢ = eᵢ / d (one division each). -/
def softmaxTraceWith (expFn : α → α) (x : List α) : SoftmaxTrace α :=
  match x with
  | [] => { m := Context.zero, exps := [], denom := Context.zero, out := [] }
  | x0 :: _ =>
    let m := Lst.foldl Context.max x0 x
    let es := Lst.map (fun xi => expFn (Context.sub xi m)) x
    let d := Spec.MoE.sumSpec es
    { m := m, exps := es, denom := d, out := Lst.map (fun e => Context.div e d) es }

/-- `softmaxVecSpec` with the exponential supplied: the output of the trace. -/
def softmaxVecSpecWith (expFn : α → α) (x : List α) : List α := (softmaxTraceWith expFn x).out

/-- TorchLean's `softmaxVecSpec`. -/
def softmaxVecSpec [ExpContext α] (x : List α) : List α :=
  (softmaxTraceWith ExpContext.exp x).out

end Activation

namespace Spec.MoE

variable {α : Type} [Context α]

/-- Gates from probabilities `p`: `p e / (sum of p j over kept j, index order)` where
`e` is kept on `p`, else zero (`getScalar_gatesVecSpec`). -/
def gatesFromProbs (k : Nat) (p : List α) : List α :=
  let idx := Lst.range (Lst.len p)
  let mask := Lst.map (kept k p) idx
  let total := sumSpec (Lst.map (score p) (Lst.filter (fun j => Lst.getD mask j false) idx))
  Lst.map (fun e => if Lst.getD mask e false then Context.div (score p e) total
    else Context.zero) idx

/-- `gatesVecSpec` with the exponential supplied (routing is on the probabilities). -/
def gatesVecSpecWith (expFn : α → α) (k : Nat) (logits : List α) : List α :=
  gatesFromProbs k (Activation.softmaxTraceWith expFn logits).out

/-- TorchLean's `gatesVecSpec k logits`. -/
def gatesVecSpec [ExpContext α] (k : Nat) (logits : List α) : List α :=
  gatesVecSpecWith ExpContext.exp k logits

/-- `combineSpec g outs`, coordinate c: `((0 + g₀·outs₀[c]) + g₁·outs₁[c]) + …`
(`combineSpec_apply`). The output length is that of `outs₀` (empty when E = 0). -/
def combineSpec (g : List α) (outs : List (List α)) : List α :=
  let dim := Lst.len (Lst.getD outs 0 [])
  Lst.map (fun c => sumSpec (Lst.map (fun e =>
      Context.mul (score g e) (score (Lst.getD outs e []) c)) (Lst.range (Lst.len outs))))
    (Lst.range dim)

/-- The dense layer given the router's probabilities `p` (no `exp` needed, so it runs over
`Rat` too): every expert runs, `combineSpec (gatesFromProbs k p)` of their outputs. -/
def forwardSpecFromProbs (k : Nat) (p : List α) (experts : Nat → List α → List α)
    (x : List α) : List α :=
  combineSpec (gatesFromProbs k p) (Lst.map (fun e => experts e x) (Lst.range (Lst.len p)))

/-- Mixtral's sparse block given the router's probabilities `p`: only the experts kept on
`p` run; coordinate c is `((0 + g_a·out_a[c]) + g_b·out_b[c]) + …` over the kept experts
in index order (`forwardSpec_eq_sparseForwardSpec` over ℝ, and exactly over ℚ). The output
has the experts' output shape even when nothing is kept (k = 0): zeros. -/
def sparseForwardSpecFromProbs (k : Nat) (p : List α) (experts : Nat → List α → List α)
    (x : List α) : List α :=
  let g := gatesFromProbs k p
  let keptIdx := Lst.filter (kept k p) (Lst.range (Lst.len p))
  let dim := if Lst.len p == 0 then 0 else Lst.len (experts 0 x)
  let outs := Lst.map (fun e => (e, experts e x)) keptIdx
  Lst.map (fun c => sumSpec (Lst.map (fun (eo : Nat × List α) =>
      Context.mul (score g eo.1) (score eo.2 c)) outs)) (Lst.range dim)

/-- The dense layer with the exponential supplied: every expert runs. -/
def forwardSpecWith (expFn : α → α) (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  forwardSpecFromProbs k (Activation.softmaxTraceWith expFn (router x)).out experts x

/-- `forwardSpec k router experts x`: dense, `combineSpec (gatesVecSpec k (router x))`. -/
def forwardSpec [ExpContext α] (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  forwardSpecWith ExpContext.exp k router experts x

/-- Mixtral's sparse block with the exponential supplied: only the experts kept on the
probabilities run (`sparseForwardSpecFromProbs`). -/
def sparseForwardSpecWith (expFn : α → α) (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  sparseForwardSpecFromProbs k (Activation.softmaxTraceWith expFn (router x)).out experts x

/-- `sparseForwardSpec k router experts x`. -/
def sparseForwardSpec [ExpContext α] (k : Nat) (router : List α → List α)
    (experts : Nat → List α → List α) (x : List α) : List α :=
  sparseForwardSpecWith ExpContext.exp k router experts x

/-- `capacityKeeps C group`: token t (given by its expert) is kept iff fewer than C
earlier tokens of the group went to its expert (`capacity_depends_on_devices`). -/
def capacityKeeps (C : Nat) (group : List Nat) : List Bool :=
  Lst.map (fun t =>
    let e := Lst.getD group t 0
    decide (Lst.len (Lst.filter (· == e) (Lst.take t group)) < C)) (Lst.range (Lst.len group))

/-- Switch's capacity with capacity factor one: ⌈n / E⌉ (0 when E = 0, Lean's n / 0). -/
def switchCapacity (E n : Nat) : Nat := (n + E - 1) / E

/-- Switch's balancing loss on a group of tokens (expert, router probabilities):
E · Σₑ (fraction of tokens sent to e) · (mean probability of e)
(`balance_depends_on_devices`). Rat's x / 0 = 0, so an empty group gives 0. -/
def switchBalance (E : Nat) (group : List (Nat × List Rat)) : Rat :=
  let n := ratOfNat (Lst.len group)
  let perExpert := Lst.map (fun e =>
    let f := ratOfNat (Lst.len (Lst.filter (fun (t : Nat × List Rat) => t.1 == e) group))
    let P := Lst.foldl ratAdd ratZero
      (Lst.map (fun (t : Nat × List Rat) => Lst.getD t.2 e ratZero) group)
    ratMul (ratDiv f n) (ratDiv P n)) (Lst.range E)
  ratMul (ratOfNat E) (Lst.foldl ratAdd ratZero perExpert)

end Spec.MoE

/-! ## Checks of the seeds' concrete theorems, run by every regeneration -/

namespace Spec.MoE.Checks

open Spec.MoE

-- capacity_depends_on_devices
#guard capacityKeeps (switchCapacity 2 2) [0, 0] == [true, false]
#guard Lst.app (capacityKeeps (switchCapacity 2 1) [0]) (capacityKeeps (switchCapacity 2 1) [0])
    == [true, true]

-- balance_depends_on_devices
def balanceA : Nat × List Rat := (0, [3 / 4, 1 / 4])
def balanceB : Nat × List Rat := (1, [1 / 4, 3 / 4])
#guard switchBalance 2 [balanceA, balanceB] == 1
#guard switchBalance 2 [balanceA] == 3 / 2
#guard switchBalance 2 [balanceB] == 3 / 2

def bits32 (v : List Float32) : List Nat := Lst.map f32bits v

-- The binary32 example: logits 0 and 2⁻³⁰ (0x30800000) have the same binary32
-- probability, so routing on probabilities keeps expert 0 and on logits expert 1.
def tinyLogits : List Float32 := [Float32.ofBits 0, Float32.ofBits 0x30800000]
#guard keptExperts 1 tinyLogits == [1]
#guard keptExperts 1 (Activation.softmaxVecSpec tinyLogits) == [0]
#guard bits32 (Activation.softmaxVecSpec tinyLogits) == [0x3f000000, 0x3f000000]
#guard bits32 (gatesVecSpec 1 tinyLogits) == [0x3f800000, 0]
-- In binary64 the two probabilities differ, so both routings keep expert 1.
#guard keptExperts 1 (Activation.softmaxVecSpec (Lst.map f32toF64 tinyLogits)) == [1]

/-- Every vector of length `n` over `vals`. -/
def allVectors {β : Type} (vals : List β) : Nat → List (List β)
  | 0 => [[]]
  | n + 1 => Lst.flatMap (fun v => Lst.map (fun x => x :: v) vals) (allVectors vals n)

/-- card_kept, length_keptExperts, beats_of_kept, rank_lt and rank_injective at one
score vector and one k. -/
def routingFactsHold {β : Type} [Context β] (s : List β) (k : Nat) : Bool :=
  let E := Lst.len s
  let idx := Lst.range E
  let keptIdx := Lst.filter (kept k s) idx
  let r := ranks s
  Lst.len keptIdx == min k E &&
  Lst.len (keptExperts k s) == min k E &&
  Lst.all (kept k s) (keptExperts k s) &&
  Lst.all (fun i => Lst.all (fun i' => !(kept k s i && !kept k s i') || beats s i i') idx) idx &&
  Lst.all (fun i => Lst.all (fun j => i == j || Lst.getD r i 0 != Lst.getD r j 0) idx) idx &&
  Lst.all (fun i => decide (Lst.getD r i 0 < E)) idx

/-- Binary64 values with ties, signed zeros and infinities (NaN is outside the domain). -/
def floatValues : List Float :=
  [Float.ofBits 0xfff0000000000000, Float.ofBits 0x8000000000000000, Float.ofBits 0,
    Float.ofBits 0x3ff0000000000000, Float.ofBits 0x7ff0000000000000]

def ratValues : List Rat := [-1, 0, 1 / 3, 1]

def exhaustive {β : Type} [Context β] (vals : List β) : Bool :=
  Lst.all (fun E => Lst.all (fun s => Lst.all (routingFactsHold s) (Lst.range (E + 2)))
    (allVectors vals E)) (Lst.range 5)

-- Exhaustive over every score vector with E ≤ 4 and every k ≤ E + 1.
#guard exhaustive floatValues
#guard exhaustive ratValues

-- kept_congr: a strictly increasing map of the scores (x ↦ 3x - 1 on ℚ) keeps the same.
def monotoneImage (s : List Rat) : List Rat := Lst.map (fun x => ratSub (ratMul 3 x) 1) s
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (fun k =>
    keptExperts k s == keptExperts k (monotoneImage s)) (Lst.range (E + 2)))
  (allVectors ratValues E)) (Lst.range 5)

-- +0 and -0 tie: the lower index wins either way round.
#guard keptExperts 1 [Float.ofBits 0x8000000000000000, Float.ofBits 0] == [0]
#guard keptExperts 1 [Float.ofBits 0, Float.ofBits 0x8000000000000000] == [0]

-- The checks can fail: a NaN score breaks StrictWeak and with it card_kept: with scores
-- [0, NaN, 1] expert 0 beats 1 (index), 1 beats 2 (index), 2 beats 0 (score), so every
-- rank is 1 and k = 1 keeps nobody.
#guard !routingFactsHold [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] 1
#guard ranks [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] == [1, 1, 1]
-- ... and keptExperts lists, for each position r < min k E, the first expert of rank r:
-- no expert has rank 0, so k = 2 gives only the first expert of rank 1 (the C++
-- keptExpertsLiteral must give the same, keptExpertsLiteralIsLeansOnNaNRows pins it).
#guard keptExperts 2 [Float.ofBits 0, Float.ofBits 0x7ff8000000000000,
  Float.ofBits 0x3ff0000000000000] == [0]

-- moe-gate-permute for the softmax alone holds with no condition over ℚ, for any
-- exponential: the max of a list and an exact sum do not depend on the order. Checked with
-- a rational stand-in for exp over every vector of length ≤ 3 and every relabelling.
def ratExpStandIn (x : Rat) : Rat := ratDiv 1 (ratAdd (ratSub 1 x) (ratDiv (ratMul x x) 2))
def permutations : Nat → List (List Nat)
  | 0 => [[]]
  | n + 1 => Lst.flatMap (fun p => Lst.map (fun i => Lst.app (Lst.take i p)
      (n :: Lst.drop i p)) (Lst.range (n + 1))) (permutations n)
def softmaxRelabels (s : List Rat) (e : List Nat) : Bool :=
  let sm := Activation.softmaxVecSpecWith ratExpStandIn
  let se := Lst.map (fun j => score s (Lst.getD e j 0)) (Lst.range (Lst.len s))
  Lst.all (fun i => ratEq (score (sm se) i) (score (sm s) (Lst.getD e i 0)))
    (Lst.range (Lst.len s))
#guard Lst.all (fun E => Lst.all (fun s => Lst.all (softmaxRelabels s) (permutations E))
  (allVectors ratValues E)) (Lst.range 4)

end Spec.MoE.Checks
