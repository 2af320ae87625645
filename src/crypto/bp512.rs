//! brainpoolP512r1 (RFC 5639), for ECDSA signature checks only.
//!
//! RustCrypto has crates for brainpoolP256r1 and P384r1 (`bp256`, `bp384`)
//! but none for P512r1, which gpgsm verifies. This module defines the curve
//! the way those crates do, with RustCrypto's own generic machinery: the
//! field and scalar arithmetic come from `primefield`'s Montgomery macros
//! over `crypto-bigint`, the group law from `primeorder`, signature
//! verification from `ecdsa`. Only the curve's published constants are
//! ours (checked in the tests: the generator lies on the curve and has the
//! stated order).

use elliptic_curve::bigint::{Odd, U512};
use elliptic_curve::consts::U64;
use elliptic_curve::{CurveArithmetic, PrimeCurveArithmetic};
use primeorder::{mul_backend, point_arithmetic, PrimeCurveParams};

/// The field modulus p.
const MODULUS_HEX: &str = "aadd9db8dbe9c48b3fd4e6ae33c9fc07cb308db3b3c9d20ed6639cca703308717d4d9b009bc66842aecda12ae6a380e62881ff2f2d82c68528aa6056583a48f3";
/// The group order q.
const ORDER_HEX: &str = "aadd9db8dbe9c48b3fd4e6ae33c9fc07cb308db3b3c9d20ed6639cca70330870553e5c414ca92619418661197fac10471db1d381085ddaddb58796829ca90069";
const ORDER: Odd<U512> = Odd::<U512>::from_be_hex(ORDER_HEX);

/// The curve brainpoolP512r1.
#[derive(Copy, Clone, Debug, Default, Eq, PartialEq, PartialOrd, Ord)]
pub struct BrainpoolP512r1;

impl elliptic_curve::Curve for BrainpoolP512r1 {
    type FieldBytesSize = U64;
    type Uint = U512;
    const ORDER: Odd<U512> = ORDER;
}

impl elliptic_curve::PrimeCurve for BrainpoolP512r1 {}

impl elliptic_curve::point::PointCompression for BrainpoolP512r1 {
    const COMPRESS_POINTS: bool = false;
}

impl ecdsa_017::EcdsaCurve for BrainpoolP512r1 {
    const NORMALIZE_S: bool = false;
}

/// SHA-512, as RFC 5639 pairs with this curve (and as deterministic
/// signing, RFC 6979, uses it).
impl ecdsa_017::DigestAlgorithm for BrainpoolP512r1 {
    type Digest = sha2_011::Sha512;
}

/// The field modulo p (Montgomery form, `primefield`'s macros).
// primefield 0.14's macros call `Uint::bits`, deprecated in crypto-bigint 0.7.
#[allow(deprecated)]
mod field {
    use elliptic_curve::bigint::U512;
    use elliptic_curve::ff::PrimeField;
    use elliptic_curve::ops::BatchInvert;
    use elliptic_curve::subtle::{Choice, ConstantTimeEq, CtOption};

    use super::MODULUS_HEX;

    primefield::monty_field_params! {
        name: FieldParams,
        modulus: MODULUS_HEX,
        uint: U512,
        byte_order: primefield::ByteOrder::BigEndian,
        // The least quadratic non-residue modulo p.
        multiplicative_generator: 2,
        doc: "Montgomery parameters for brainpoolP512's field modulus"
    }

    primefield::monty_field_element! {
        name: FieldElement,
        params: FieldParams,
        uint: U512,
        doc: "Element in the brainpoolP512 finite field modulo p"
    }

    primefield::monty_field_arithmetic! {
        name: FieldElement,
        params: FieldParams,
        uint: U512
    }

    impl BatchInvert for FieldElement {}
}

/// The scalars modulo q.
#[allow(deprecated)]
mod scalar {
    use elliptic_curve::bigint::U512;
    use elliptic_curve::ff::PrimeField;
    use elliptic_curve::scalar::{FromUintUnchecked, IsHigh};
    use elliptic_curve::subtle::{Choice, ConstantTimeEq, ConstantTimeGreater, CtOption};
    use primeorder::wnaf;

    use super::{BrainpoolP512r1, ORDER, ORDER_HEX};

    primefield::monty_field_params! {
        name: ScalarParams,
        modulus: ORDER_HEX,
        uint: U512,
        byte_order: primefield::ByteOrder::BigEndian,
        // The least quadratic non-residue modulo q.
        multiplicative_generator: 7,
        doc: "Montgomery parameters for brainpoolP512's scalar modulus"
    }

    primefield::monty_field_element! {
        name: Scalar,
        params: ScalarParams,
        uint: U512,
        doc: "Element in the brainpoolP512 scalar field modulo q"
    }

    primefield::monty_field_arithmetic! {
        name: Scalar,
        params: ScalarParams,
        uint: U512
    }

    primefield::monty_field_reduce! {
        name: Scalar,
        params: ScalarParams,
        uint: U512,
    }

    elliptic_curve::scalar_impls!(BrainpoolP512r1, Scalar);

    wnaf::impl_wnaf_size_for_scalar!(Scalar);

    impl AsRef<Scalar> for Scalar {
        fn as_ref(&self) -> &Scalar {
            self
        }
    }

    impl FromUintUnchecked for Scalar {
        type Uint = U512;

        fn from_uint_unchecked(uint: Self::Uint) -> Self {
            Self::from_uint_unchecked(uint)
        }
    }

    impl IsHigh for Scalar {
        fn is_high(&self) -> Choice {
            const MODULUS_SHR1: U512 = ORDER.as_ref().shr_vartime(1);
            self.to_canonical().ct_gt(&MODULUS_SHR1)
        }
    }
}

use field::FieldElement;
use scalar::Scalar;

impl CurveArithmetic for BrainpoolP512r1 {
    type AffinePoint = primeorder::AffinePoint<BrainpoolP512r1>;
    type ProjectivePoint = primeorder::ProjectivePoint<BrainpoolP512r1>;
    type Scalar = Scalar;
}

impl elliptic_curve::hazmat::FieldArithmetic for BrainpoolP512r1 {
    type FieldElement = FieldElement;
}

impl PrimeCurveArithmetic for BrainpoolP512r1 {
    type CurveGroup = primeorder::ProjectivePoint<BrainpoolP512r1>;
}

impl PrimeCurveParams for BrainpoolP512r1 {
    type PointArithmetic = point_arithmetic::EquationAIsGeneric;
    type Backend = mul_backend::VariableOnly;

    const EQUATION_A: FieldElement = FieldElement::from_hex_vartime(
        "7830a3318b603b89e2327145ac234cc594cbdd8d3df91610a83441caea9863bc2ded5d5aa8253aa10a2ef1c98b9ac8b57f1117a72bf2c7b9e7c1ac4d77fc94ca",
    );
    const EQUATION_B: FieldElement = FieldElement::from_hex_vartime(
        "3df91610a83441caea9863bc2ded5d5aa8253aa10a2ef1c98b9ac8b57f1117a72bf2c7b9e7c1ac4d77fc94cadc083e67984050b75ebae5dd2809bd638016f723",
    );
    const GENERATOR: (FieldElement, FieldElement) = (
        FieldElement::from_hex_vartime(
            "81aee4bdd82ed9645a21322e9c4c6a9385ed9f70b5d916c1b43b62eef4d0098eff3b1f78e2d0d48d50d1687b93b97d5f7c6d5047406a5e688b352209bcb9f822",
        ),
        FieldElement::from_hex_vartime(
            "7dde385d566332ecc0eabfa9cf7822fdf209f70024a57b1aa000c55b881f8111b2dcde494a5f485e5bca4bd88a2763aed1ca2b2fa8f0540678cd1e0f3ad80892",
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use elliptic_curve::group::Group;
    use elliptic_curve::sec1::ToSec1Point;

    /// The generator is on the curve (the point type checks that when it is
    /// decoded) and q·G is the identity.
    #[test]
    fn the_generator_has_the_stated_order() {
        let g = primeorder::ProjectivePoint::<BrainpoolP512r1>::generator();
        let encoded = g.to_affine().to_sec1_point(false);
        let decoded = primeorder::AffinePoint::<BrainpoolP512r1>::try_from(&encoded);
        assert!(decoded.is_ok(), "the generator lies on the curve");
        let q_minus_1 = -Scalar::ONE;
        assert_eq!(g * q_minus_1 + g, primeorder::ProjectivePoint::<BrainpoolP512r1>::identity());
        assert_ne!(g * q_minus_1, primeorder::ProjectivePoint::<BrainpoolP512r1>::identity());
    }
}
