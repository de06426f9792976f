/* PLACEHOLDER: tests the CUDA bodies of the pool codelets against their CPU bodies. */
int main(void)
{
    return 77;
}
